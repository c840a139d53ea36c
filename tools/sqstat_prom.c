// SPDX-License-Identifier: BSD-2-Clause
/* sqstat_prom.c - sqstat as a Prometheus exporter; see sqstat_prom.h. */
#define _GNU_SOURCE
#include "sqstat_prom.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqbpf.h"
#include "sqfile.h"
#include "sqhttp.h"
#include "sqloop.h"
#include "sqmetrics.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqstat.h"
#include "sqstat.skel.h"

/* The bytes of a label value (its command line, a route; longer ones are cut, with a
 * marker and a hash of the whole). */
#define LABEL_MAX 128

/* ===================================================================== */
/* The metrics                                                           */
/* ===================================================================== */

/* The kernel's histograms as of one scrape: every (VM, family, kind, label). */
struct hists {
	struct sqstat_hist_key *keys;
	struct sqstat_hist *vals;
	size_t n;
};

static struct hists read_hists(int fd)
{
	struct hists h = { 0 };
	size_t nkeys;

	if (fd < 0 || !(h.keys = sq_map_keys(fd, sizeof(*h.keys), SQSTAT_MAX_HISTS, &nkeys)))
		return h;
	h.vals = calloc(nkeys ? nkeys : 1, sizeof(*h.vals));
	for (size_t i = 0; h.vals && i < nkeys; i++)
		if (bpf_map_lookup_elem(fd, &h.keys[i], &h.vals[h.n]) == 0)
			h.keys[h.n++] = h.keys[i];
	return h;
}

static const struct sqstat_hist *hist_of(const struct hists *h, pid_t pid, __u16 family, __u16 kind, __u64 label)
{
	for (size_t i = 0; i < h->n; i++)
		if ((pid_t)h->keys[i].pid == pid && h->keys[i].family == family && h->keys[i].kind == kind &&
		    h->keys[i].label == label)
			return &h->vals[i];
	return NULL;
}

/* The labels of every series of a VM: its PID (its command line is sqvm_info's). */
static int vm_labels(const struct sqstat_prom_vm *v, char *pid, size_t len, struct sqm_label *l)
{
	snprintf(pid, len, "%d", v->pid);
	l[0] = (struct sqm_label){ "pid", pid };
	return 1;
}

/* text as a label value of at most LABEL_MAX bytes (out holds LABEL_MAX + 1): a longer
 * one is cut at a character's start and ends "...#" and 8 hex digits of its FNV-1a hash,
 * so that two long names that share a beginning stay two series. */
static const char *bounded_label(char *out, const char *text)
{
	size_t n = strlen(text), cut = LABEL_MAX - 12;
	uint32_t hash = 2166136261u;

	if (n <= LABEL_MAX)
		return text;
	for (size_t i = 0; i < n; i++)
		hash = (hash ^ (unsigned char)text[i]) * 16777619u;
	while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
		cut--;	/* not inside a UTF-8 sequence */
	snprintf(out, LABEL_MAX + 1, "%.*s...#%08x", (int)cut, text, hash);
	return out;
}

/* sqvm_info{pid,cmdline} 1: a VM's command line once, not on each of its series (the
 * Prometheus idiom: join on pid), cut at LABEL_MAX bytes. */
static void write_info(const struct sqm *out, const struct sqstat_metrics *m)
{
	struct sqm_label l[2];
	char pid[16], cmd[LABEL_MAX + 1];

	sqm_family(out, "sqvm_info", "info", "A running VM, with its command line (join on pid).");
	for (size_t i = 0; i < m->nvms; i++) {
		vm_labels(&m->vms[i], pid, sizeof(pid), l);
		l[1] = (struct sqm_label){ "cmdline", bounded_label(cmd, m->vms[i].cmdline) };
		sqm_uint(out, "sqvm_info", l, 2, 1);
	}
}

/* The VM's totals: one counter family each. */
static void write_counters(const struct sqm *out, const struct sqstat_metrics *m)
{
	static const struct {
		const char *name, *help;
		size_t off;
		bool ns;		/* nanoseconds, written as seconds */
	} metrics[] = {
#define M(n, h, f, ns) { n, h, offsetof(struct sqstat_totals, f), ns }
		M("sqvm_activations_total", "Method and block activations (calls).", activations, 0),
		M("sqvm_allocations_total", "Objects allocated in the collected heap.", allocations, 0),
		M("sqvm_allocated_bytes_total", "Bytes allocated in the collected heap.", bytes_allocated, 0),
		M("sqvm_young_collections_total", "Young (incremental) collections.", young_count, 0),
		M("sqvm_young_collection_seconds_total", "Time paused in young collections.", young_pause_ns, 1),
		M("sqvm_full_collections_total", "Full collections.", full_count, 0),
		M("sqvm_full_collection_seconds_total", "Time paused in full collections.", full_pause_ns, 1),
		M("sqvm_process_switches_total", "Green process switches.", process_switches, 0),
		M("sqvm_messages_not_understood_total", "Messages not understood (doesNotUnderstand:).", dnus, 0),
		M("sqvm_class_loads_total", "Classes loaded from files.", class_loads, 0),
		M("sqvm_primitive_failures_total", "Primitives that failed.", primitive_failures, 0),
#undef M
	};
	struct sqm_label l[1];
	char pid[16];

	for (size_t k = 0; k < sizeof(metrics) / sizeof(metrics[0]); k++) {
		sqm_family(out, metrics[k].name, "counter", metrics[k].help);
		for (size_t i = 0; i < m->nvms; i++) {
			__u64 raw;
			memcpy(&raw, (const char *)m->vms[i].totals + metrics[k].off, sizeof(raw));
			vm_labels(&m->vms[i], pid, sizeof(pid), l);
			if (metrics[k].ns)
				sqm_seconds(out, metrics[k].name, l, 1, raw);
			else
				sqm_uint(out, metrics[k].name, l, 1, raw);
		}
	}
}

/* sqvm_gc_pause_seconds{kind}: the pauses the GC probes reported since sqstat began (a
 * VM that started before it has more collections in its counters than here). */
static void write_gc_pauses(const struct sqm *out, const struct sqstat_metrics *m, const struct hists *h)
{
	static const char *const kinds[] = { "young", "full" };
	static const struct sqstat_hist none;
	struct sqm_label l[2];
	char pid[16];

	sqm_family(out, "sqvm_gc_pause_seconds", "histogram", "Garbage collection pauses, by kind of collection.");
	for (size_t i = 0; i < m->nvms; i++) {
		vm_labels(&m->vms[i], pid, sizeof(pid), l);
		for (int k = 0; k < 2; k++) {
			const struct sqstat_hist *g = hist_of(h, m->vms[i].pid, SQSTAT_GC_PAUSE, k, 0);
			l[1] = (struct sqm_label){ "kind", kinds[k] };
			g = g ? g : &none;
			sqm_log2_us_histogram(out, "sqvm_gc_pause_seconds", l, 2, (const uint64_t *)g->slots, SQ_MAX_SLOTS,
					      SQSTAT_BUCKETS, g->sum_ns, NULL);
		}
	}
}

/* A request histogram's place in the output: by VM, route and code. It points at the
 * kernel's copy (1,128 bytes, struct hists) rather than holding one: 8,192 of them are
 * sorted twice at a scrape. */
struct request_series {
	__u64 label;			/* the route's address */
	__u16 kind;			/* the status's (SQSTAT_CODE) */
	char route[LABEL_MAX + 1];	/* its label: the name, its address if the name is lost, "other" */
	int code;			/* CODE_OTHER: "other" */
	const struct sqstat_hist *h;
};

#define CODE_OTHER 100000

static int by_label_kind(const void *a, const void *b)
{
	const struct request_series *x = a, *y = b;

	if (x->label != y->label)
		return x->label < y->label ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

static int by_route_code(const void *a, const void *b)
{
	const struct request_series *x = a, *y = b;
	int c = strcmp(x->route, y->route);

	return c ? c : (x->code > y->code) - (x->code < y->code);
}

/* Whether a VM may give value its own series: it has one already, or there is room for
 * it (admitted values stay for the VM's life, so a series never moves into "other" and
 * no counter goes down). */
static bool admitted_route(struct sqstat_series *s, __u64 label)
{
	for (int i = 0; i < s->nroutes; i++)
		if (s->routes[i] == label)
			return true;
	if (s->nroutes == SQSTAT_ROUTES_PER_VM)
		return false;
	s->routes[s->nroutes++] = label;
	return true;
}

static bool admitted_code(struct sqstat_series *s, __u16 kind)
{
	for (int i = 0; i < s->ncodes; i++)
		if (s->codes[i] == kind)
			return true;
	if (s->ncodes == SQSTAT_CODES_PER_VM)
		return false;
	s->codes[s->ncodes++] = kind;
	return true;
}

/* The request series of VM v from the histograms in h, sorted by route and code (those
 * with the same labels, routes and codes past the VM's bounds or names cut alike, next
 * to each other: merged() sums them); their count. Only an admitted route's name is
 * read. */
static size_t requests_of(const struct hists *h, const struct sqstat_prom_vm *v, int names_fd,
			  struct request_series *out)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct sqstat_hist_key *k = &h->keys[i];
		if ((pid_t)k->pid == v->pid && k->family == SQSTAT_REQUEST)
			out[n++] = (struct request_series){ .label = k->label, .kind = k->kind, .h = &h->vals[i] };
	}
	qsort(out, n, sizeof(*out), by_label_kind);	/* the same order of admission at every scrape */
	for (size_t i = 0; i < n; i++) {
		struct request_series *r = &out[i];
		if (admitted_route(v->series, r->label)) {
			const char *name = sq_map_name(names_fd, v->pid, r->label, NULL);
			char addr[24], cut[LABEL_MAX + 1];
			snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)r->label);
			snprintf(r->route, sizeof(r->route), "%s", bounded_label(cut, name ? name : addr));
		} else {
			snprintf(r->route, sizeof(r->route), "other");
		}
		r->code = r->kind != SQSTAT_CODE_OTHER && admitted_code(v->series, r->kind) ? (int)r->kind + SQSTAT_CODE_MIN
										      : CODE_OTHER;
	}
	qsort(out, n, sizeof(*out), by_route_code);
	return n;
}

/* The histogram of the series rs[0..) that share rs[0]'s labels, summed into *sum (each
 * bucket's exemplar the latest of theirs; one torn by a write while the kernel's copy
 * was made, sqstat.h, is none); how many there were. */
static size_t merged(const struct request_series *rs, size_t n, struct sqstat_hist *sum)
{
	size_t k;

	*sum = (struct sqstat_hist){ 0 };
	for (k = 0; k < n && (k == 0 || by_route_code(&rs[0], &rs[k]) == 0); k++) {
		const struct sqstat_hist *h = rs[k].h;
		for (int s = 0; s < SQ_MAX_SLOTS; s++)
			sum->slots[s] += h->slots[s];
		sum->sum_ns += h->sum_ns;
		for (int b = 0; b <= SQSTAT_BUCKETS; b++) {
			const struct sqstat_exemplar *e = &h->ex[b];
			if (e->id && e->check == sqstat_exemplar_check(e->id, e->ns, e->end_ns) &&
			    (!sum->ex[b].id || e->end_ns > sum->ex[b].end_ns))
				sum->ex[b] = *e;
		}
	}
	return k;
}

/* route as an exemplar's label value of at most chars code points (as sqm_chars counts
 * them; out holds LABEL_MAX + 1 bytes, route at most LABEL_MAX): a longer one is cut at a
 * character and ends "...#" and 8 hex digits of its FNV-1a hash, as bounded_label cuts. */
static const char *exemplar_route(char *out, const char *route, size_t chars)
{
	const unsigned char *s = (const unsigned char *)route;
	uint32_t hash = 2166136261u;
	size_t n = 0;

	if (sqm_chars(route) <= chars)
		return route;
	for (const unsigned char *t = s; *t; t++)
		hash = (hash ^ *t) * 16777619u;
	while (*s && n + 1 + 12 <= chars) {	/* one more character, and room for the marker */
		int k = sq_utf8_seq(s, strnlen((const char *)s, 4));
		s += k ? k : 1;
		n++;
	}
	snprintf(out, LABEL_MAX + 1, "%.*s...#%08x", (int)((const char *)s - route), route, hash);
	return out;
}

/* The exemplars of a series' buckets (OpenMetrics): each bucket's latest request, by its
 * id (request_id, the id sqreq --slowest prints: the VM's request__begin id) and route,
 * its latency and when it ended (CLOCK_MONOTONIC made wall time by mono_to_wall). The
 * labels point into ids and cut, which the caller keeps. */
static void exemplars_of(const struct sqstat_hist *h, const char *route, __s64 mono_to_wall,
			 struct sqm_exemplar *ex, char (*ids)[24], char (*cut)[LABEL_MAX + 1])
{
	for (int b = 0; b <= SQSTAT_BUCKETS; b++) {
		const struct sqstat_exemplar *e = &h->ex[b];
		size_t chars;

		ex[b] = (struct sqm_exemplar){ 0 };
		if (!e->id)
			continue;
		snprintf(ids[b], sizeof(ids[b]), "%llu", (unsigned long long)e->id);
		chars = SQM_EXEMPLAR_CHARS - strlen("request_id") - strlen(ids[b]) - strlen("route");
		ex[b].labels[0] = (struct sqm_label){ "request_id", ids[b] };
		ex[b].labels[1] = (struct sqm_label){ "route", exemplar_route(cut[b], route, chars) };
		ex[b].nlabels = 2;
		ex[b].value_ns = e->ns;
		ex[b].time_ns = (__u64)((__s64)e->end_ns + mono_to_wall);
	}
}

/* CLOCK_REALTIME less CLOCK_MONOTONIC now, in ns: what makes a kernel time wall time. */
static __s64 mono_to_wall_ns(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (__s64)(rt.tv_sec * 1000000000ULL + rt.tv_nsec) - (__s64)sq_mono_ns();
}

/* sqvm_request_duration_seconds{route,code}: the requests that began and ended since
 * sqstat began (bpf/sqrequest.bpf.h pairs them), by route and request__end's status
 * (promhttp's label name for it: code); in OpenMetrics each bucket with its exemplar. */
static void write_requests(const struct sqm *out, const struct sqstat_metrics *m, const struct hists *h,
			   int names_fd)
{
	struct request_series *rs = calloc(h->n ? h->n : 1, sizeof(*rs));
	struct sqm_exemplar ex[SQSTAT_BUCKETS + 1];
	struct sqstat_hist sum;
	char ids[SQSTAT_BUCKETS + 1][24], cut[SQSTAT_BUCKETS + 1][LABEL_MAX + 1];
	__s64 to_wall = mono_to_wall_ns();
	struct sqm_label l[3];
	char pid[16], code[16];

	sqm_family(out, "sqvm_request_duration_seconds", "histogram",
		   "Requests (Probe beginRequest: to endRequest:status:), by route and status.");
	for (size_t i = 0; rs && i < m->nvms; i++) {
		size_t n = requests_of(h, &m->vms[i], names_fd, rs);
		vm_labels(&m->vms[i], pid, sizeof(pid), l);
		for (size_t r = 0, same; r < n; r += same) {
			same = merged(&rs[r], n - r, &sum);
			if (rs[r].code == CODE_OTHER)
				snprintf(code, sizeof(code), "other");
			else
				snprintf(code, sizeof(code), "%d", rs[r].code);
			l[1] = (struct sqm_label){ "route", rs[r].route };
			l[2] = (struct sqm_label){ "code", code };
			exemplars_of(&sum, rs[r].route, to_wall, ex, ids, cut);
			sqm_log2_us_histogram(out, "sqvm_request_duration_seconds", l, 3, (const uint64_t *)sum.slots,
					      SQ_MAX_SLOTS, SQSTAT_BUCKETS, sum.sum_ns, ex);
		}
	}
	free(rs);
}

static void write_start_times(const struct sqm *out, const struct sqstat_metrics *m)
{
	struct sqm_label l[1];
	char pid[16];

	sqm_family(out, "sqvm_start_time_seconds", "gauge", "When the VM started, in seconds since the epoch.");
	for (size_t i = 0; i < m->nvms; i++) {
		vm_labels(&m->vms[i], pid, sizeof(pid), l);
		sqm_uint(out, "sqvm_start_time_seconds", l, 1, m->vms[i].start_wall);
	}
}

/* The running VMs' metrics in the format out has (sqmetrics.h), without timestamps: the
 * same for a scrape (--listen) and a file (--prom). Each family is one function: a new
 * one (request latency per route, say) is one more. */
static void write_metrics(const struct sqm *out, const struct sqstat_metrics *m)
{
	struct sqstat_bpf *skel = m->skel;
	struct hists h = read_hists(skel ? bpf_map__fd(skel->maps.hists) : -1);

	write_info(out, m);
	write_counters(out, m);
	write_gc_pauses(out, m, &h);
	write_requests(out, m, &h, skel ? bpf_map__fd(skel->maps.names) : -1);
	write_start_times(out, m);
	if (skel) {
		sqm_family(out, "sqstat_lost_observations_total", "counter",
			   "Observations the kernel's histogram map had no room for.");
		sqm_uint(out, "sqstat_lost_observations_total", NULL, 0, skel->bss->lost_observations);
		sqm_family(out, "sqstat_dropped_vms_total", "counter",
			   "VMs whose row was evicted (gone, exited or dead) or refused because the table was full.");
		sqm_uint(out, "sqstat_dropped_vms_total", NULL, 0, m->dropped_vms);
	}
	sqm_end(out);
	free(h.keys);
	free(h.vals);
}

/* ===================================================================== */
/* Their file and their server                                           */
/* ===================================================================== */

/* node_exporter's textfile collector reads the text format only. */
static int write_metrics_file(FILE *f, void *m)
{
	struct sqm out = { f, SQM_TEXT };

	write_metrics(&out, m);
	return 0;
}

int sqstat_write_prom(const char *path, const struct sqstat_metrics *m)
{
	return sq_file_replace(path, 0644, write_metrics_file, (void *)m) ? -1 : 0;
}

/* The one server's scrapes: what sqstat hands over at each. */
static struct {
	sqstat_scrape_fn scrape;
	void *ctx;
} server;

/* The forms of /metrics, as sq_http_open negotiates them: the text format is the
 * default (a scraper that asks for nothing, or for text/plain), OpenMetrics for those
 * that ask for it (Prometheus does, first). Index = enum sqm_format. */
static const char *const formats[] = { SQM_CONTENT_TYPE, SQM_OPENMETRICS_TYPE };

static int render(void *ctx, int type, FILE *f)
{
	struct sqm out = { f, type == SQM_OPENMETRICS ? SQM_OPENMETRICS : SQM_TEXT };

	write_metrics(&out, server.scrape(server.ctx));
	return 0;
}

struct sq_http *sqstat_serve(struct sq_loop *loop, const char *addr, sqstat_scrape_fn scrape, void *ctx)
{
	struct sq_http *http;

	server.scrape = scrape;
	server.ctx = ctx;
	http = sq_http_open(addr, "/metrics", formats, 2, render, NULL);
	if (http && sq_loop_watch(loop, sq_http_fd(http), sq_http_service, http)) {
		sq_http_close(http);
		return NULL;
	}
	return http;
}
