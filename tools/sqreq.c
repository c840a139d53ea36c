// SPDX-License-Identifier: BSD-2-Clause
/* sqreq - the requests of sqvm processes (Probe beginRequest: / endRequest:status:), per
 * route: count, latency percentiles and maximum, and where the time went, as mean ms
 * per request: the process running (CPU), ready to run (RUNQ), blocked on I/O, a
 * Semaphore or a Delay, or paused by a collection (GC); allocations and bytes per
 * request; -L a latency histogram per route; --slowest N the slowest requests, each with
 * its own breakdown and the methods that took most of it. Counted in the kernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqloop.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqreq.h"
#include "sqreq.skel.h"

#define OPT_SLOWEST 0x2001
#define MAX_SLOWEST 1000

static struct env {
	struct sq_common c;
	bool hist;		/* -L */
	long slowest;		/* --slowest N */
	long hz;		/* -F: CPU samples per second for --slowest's methods */
	long top;		/* -n */
} env = { .hz = 999 };

const char *argp_program_version = "sqreq (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Show the requests of sqvm processes per route: count, latency (p50, p90, p99,\n"
"max) and where the time went (CPU, run queue, I/O, Semaphore, Delay, GC), with\n"
"allocations per request. Requests are marked by the program:\n"
"id := Probe beginRequest: 'GET /kv' ... Probe endRequest: id status: 200.\n"
"\n"
"USAGE: sqreq [-h] [-p PID] [--vm PATH] [-L] [--slowest N] [-F HZ] [-n N]\n"
"             [-d DURATION] [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqreq -p 185              # per route, until Ctrl-C or the VM exits\n"
"    sqreq -p 185 5            # every 5 seconds\n"
"    sqreq -p 185 -L           # with a latency histogram per route\n"
"    sqreq -p 185 --slowest 5  # and the 5 slowest requests, where their time went\n"
"    sqreq -p 185 -j 1 10      # JSON lines, once a second, 10 times\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "latency-histogram", 'L', NULL, 0, "A latency histogram per route (us)", 0 },
	{ "slowest", OPT_SLOWEST, "N", 0, "The N slowest requests of each report, each with its breakdown and methods", 0 },
	{ "frequency", 'F', "HZ", 0, "With --slowest: CPU samples per second for the methods (default 999)", 0 },
	{ "top", 'n', "N", 0, "The N routes with the most requests (default: all)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'L':
		env.hist = true;
		break;
	case OPT_SLOWEST:
		if (sq_parse_long(arg, 1, MAX_SLOWEST, &env.slowest))
			argp_error(state, "invalid number of requests '%s' (1 to %d)", arg, MAX_SLOWEST);
		break;
	case 'F':
		if (sq_parse_long(arg, 1, 10000, &env.hz))
			argp_error(state, "invalid frequency '%s' (1 to 10000 Hz)", arg);
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &env.top))
			argp_error(state, "invalid number of routes '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The breakdown's columns, in the order printed. */
static const int shown_states[] = { SQ_GREEN_RUNNING, SQ_GREEN_READY, SQ_GREEN_IO, SQ_GREEN_SEMAPHORE,
				    SQ_GREEN_DELAY, SQ_GREEN_GC };
#define NSHOWN (int)(sizeof(shown_states) / sizeof(shown_states[0]))
static const char *const shown_heads[NSHOWN] = { "CPU", "RUNQ", "IO", "SEM", "DELAY", "GC" };
/* JSON keys of the breakdown (snake_case; "cpu" for running, "runq" for ready). */
static const char *const json_keys[SQ_GREEN_NSTATES] = { "other", "cpu", "runq", "sem", "delay", "io", "gc" };

/* ===================================================================== */
/* Latency percentiles                                                   */
/* ===================================================================== */

/* The range [*low, *high) of ns that slot s of the log-linear histogram holds. */
static void fine_range(int s, double *low, double *high)
{
	if (s < 16) {
		*low = s;
		*high = s + 1;
		return;
	}
	int e = s / 16 + 3, sub = s % 16;
	*low = (double)(16 + sub) * (double)(1ULL << (e - 4));
	*high = (double)(17 + sub) * (double)(1ULL << (e - 4));
}

/* The p-th percentile (0 < p <= 100) in ns: the middle of the slot it falls in, never
 * more than the maximum seen. */
static double percentile(const struct sqreq_route *r, double p, __u64 max_ns)
{
	__u64 want = (__u64)((p / 100.0) * r->count + 0.999999), seen = 0;
	double low, high;

	if (!want)
		want = 1;
	for (int s = 0; s < SQREQ_FINE_SLOTS; s++) {
		seen += r->fine[s];
		if (seen >= want) {
			fine_range(s, &low, &high);
			double mid = (low + high) / 2;
			return mid > max_ns ? max_ns : mid;
		}
	}
	return max_ns;
}

/* ===================================================================== */
/* Rows                                                                  */
/* ===================================================================== */

struct row {
	struct sqreq_key key;
	struct sqreq_route r;
	const char *route;
};

static struct sqreq_bpf *skel;

static const char *route_name(pid_t pid, __u64 addr)
{
	const char *n = sq_map_name(bpf_map__fd(skel->maps.names), pid, addr, NULL);

	return n ? n : "?";
}

static const char *method_name(pid_t pid, __u64 m)
{
	const char *n = sq_map_method_name(bpf_map__fd(skel->maps.names), bpf_map__fd(skel->maps.vms), pid, m, NULL);

	return n ? n : "?";
}

static int by_count(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->r.count != b->r.count)
		return a->r.count < b->r.count ? 1 : -1;
	if (a->key.pid != b->key.pid)
		return a->key.pid < b->key.pid ? -1 : 1;
	return strcmp(a->route, b->route);
}

/* The interval's rows, taken out of the kernel's map. */
static int take_rows(struct row **out, size_t *n)
{
	int fd = bpf_map__fd(skel->maps.routes);
	size_t nkeys, nrows = 0;
	struct sqreq_key *keys = sq_map_keys(fd, sizeof(*keys), SQREQ_MAX_ROUTES, &nkeys);
	struct row *rows = calloc(nkeys ? nkeys : 1, sizeof(*rows));

	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nkeys; i++) {
		struct row *w = &rows[nrows];
		w->key = keys[i];
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &w->r) &&
		    (bpf_map_lookup_elem(fd, &keys[i], &w->r) || bpf_map_delete_elem(fd, &keys[i])))
			continue;
		w->route = route_name(w->key.pid, w->key.route);
		nrows++;
	}
	free(keys);
	qsort(rows, nrows, sizeof(*rows), by_count);
	*out = rows;
	*n = nrows;
	return 0;
}

/* ===================================================================== */
/* The slowest requests (--slowest)                                      */
/* ===================================================================== */

static struct sqreq_event *slow;
static size_t nslow;

/* Keeps e if it is among the N slowest of the interval (a small sorted array). */
static int handle_record(void *ctx, void *data, size_t size)
{
	const struct sqreq_event *e = data;
	size_t i;

	if (size < sizeof(*e))
		return 0;
	if (nslow == (size_t)env.slowest && e->latency_ns <= slow[nslow - 1].latency_ns)
		return sq_rb_yield();
	if (nslow < (size_t)env.slowest)
		nslow++;
	for (i = nslow - 1; i > 0 && slow[i - 1].latency_ns < e->latency_ns; i--)
		slow[i] = slow[i - 1];
	slow[i] = *e;
	return sq_rb_yield();
}

static int by_share(const void *pa, const void *pb)
{
	const struct sqreq_method *a = pa, *b = pb;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

static void print_slowest_text(void)
{
	char time[48];

	if (!nslow)
		return;
	printf("\nslowest requests\n");
	for (size_t i = 0; i < nslow; i++) {
		struct sqreq_event *e = &slow[i];
		sq_format_time(time, sizeof(time), e->begin_ns, true);
		printf("%s PID %u process %llu request %llu %s status %d: %.3f ms =", time, e->pid,
		       (unsigned long long)e->process, (unsigned long long)e->id, sq_printable(route_name(e->pid, e->route)),
		       e->status, e->latency_ns / 1e6);
		for (int k = 0; k < NSHOWN; k++)
			printf(" %s %.3f", shown_heads[k], e->state_ns[shown_states[k]] / 1e6);
		printf(", %llu objects, %llu bytes\n", (unsigned long long)e->allocations,
		       (unsigned long long)e->bytes);
		if (e->trace.span)
			printf("    trace %016llx%016llx span %016llx parent %016llx\n",
			       (unsigned long long)e->trace.trace_hi, (unsigned long long)e->trace.trace_lo,
			       (unsigned long long)e->trace.span, (unsigned long long)e->trace.parent);
		qsort(e->top, SQREQ_TOP_METHODS, sizeof(e->top[0]), by_share);
		for (int k = 0; k < SQREQ_TOP_METHODS && e->top[k].method; k++)
			printf("    %10.3f ms  %s\n", e->top[k].ns / 1e6, sq_printable(method_name(e->pid, e->top[k].method)));
	}
}

static void print_states_json(const __u64 *ns, double div)
{
	printf("{");
	for (int k = 0; k < SQ_GREEN_NSTATES; k++)
		printf("%s\"%s_ms\":%.6f", k ? "," : "", json_keys[k], div ? ns[k] / 1e6 / div : 0.0);
	printf("}");
}

static void print_slowest_json(void)
{
	printf(",\"slowest\":[");
	for (size_t i = 0; i < nslow; i++) {
		struct sqreq_event *e = &slow[i];
		printf("%s{\"pid\":%u,\"process\":%llu,\"id\":%llu,\"route\":", i ? "," : "", e->pid,
		       (unsigned long long)e->process, (unsigned long long)e->id);
		sq_json_str(stdout, route_name(e->pid, e->route));
		printf(",\"status\":%d,\"latency_ms\":%.6f,\"breakdown\":", e->status, e->latency_ns / 1e6);
		print_states_json(e->state_ns, 1);
		/* W3C ids as hex, as traceparent writes them; null: no trace context */
		if (e->trace.span)
			printf(",\"trace_id\":\"%016llx%016llx\",\"span_id\":\"%016llx\",\"parent_span_id\":\"%016llx\"",
			       (unsigned long long)e->trace.trace_hi, (unsigned long long)e->trace.trace_lo,
			       (unsigned long long)e->trace.span, (unsigned long long)e->trace.parent);
		else
			printf(",\"trace_id\":null,\"span_id\":null,\"parent_span_id\":null");
		printf(",\"allocations\":%llu,\"bytes\":%llu,\"methods\":[", (unsigned long long)e->allocations,
		       (unsigned long long)e->bytes);
		qsort(e->top, SQREQ_TOP_METHODS, sizeof(e->top[0]), by_share);
		for (int k = 0; k < SQREQ_TOP_METHODS && e->top[k].method; k++) {
			printf("%s{\"name\":", k ? "," : "");
			sq_json_str(stdout, method_name(e->pid, e->top[k].method));
			printf(",\"ms\":%.6f}", e->top[k].ns / 1e6);
		}
		printf("]}");
	}
	printf("]");
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

static void print_text(struct row *rows, size_t n)
{
	size_t shown = sq_shown(n, env.top);

	if (env.c.interval_ns || env.c.timestamp)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	printf("%-7s %-24s %7s %9s %9s %9s %9s |", "PID", "ROUTE", "COUNT", "p50_ms", "p90_ms", "p99_ms", "MAX_ms");
	for (int k = 0; k < NSHOWN; k++)
		printf(" %8s", shown_heads[k]);
	printf(" | %9s %10s\n", "ALLOCS", "BYTES");
	for (size_t i = 0; i < shown; i++) {
		const struct sqreq_route *r = &rows[i].r;
		double c = r->count;
		printf("%-7u %-24.24s %7llu %9.3f %9.3f %9.3f %9.3f |", rows[i].key.pid, sq_printable(rows[i].route),
		       (unsigned long long)r->count, percentile(r, 50, r->max_ns) / 1e6,
		       percentile(r, 90, r->max_ns) / 1e6, percentile(r, 99, r->max_ns) / 1e6, r->max_ns / 1e6);
		for (int k = 0; k < NSHOWN; k++)
			printf(" %8.3f", r->state_ns[shown_states[k]] / 1e6 / c);
		printf(" | %9.1f %10.0f\n", r->allocations / c, r->bytes / c);
	}
	if (shown < n)
		printf("... %zu more route%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	if (env.hist)
		for (size_t i = 0; i < shown; i++) {
			printf("\nlatency of %s (PID %u)\n", sq_printable(rows[i].route), rows[i].key.pid);
			sq_print_log2_hist(stdout, rows[i].r.slots, SQ_MAX_SLOTS, "usecs");
		}
	print_slowest_text();
}

static void print_json(struct row *rows, size_t n, __u64 lost, __u64 nested, __u64 unseen)
{
	size_t shown = sq_shown(n, env.top);
	char time[48];

	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"type\":\"requests\",\"time\":\"%s\",\"routes\":[", time);
	for (size_t i = 0; i < shown; i++) {
		const struct sqreq_route *r = &rows[i].r;
		printf("%s{\"pid\":%u,\"route\":", i ? "," : "", rows[i].key.pid);
		sq_json_str(stdout, rows[i].route);
		printf(",\"count\":%llu,\"errors\":%llu,\"p50_ms\":%.6f,\"p90_ms\":%.6f,\"p99_ms\":%.6f,\"max_ms\":%.6f,"
		       "\"mean_ms\":%.6f,\"breakdown\":", (unsigned long long)r->count, (unsigned long long)r->errors,
		       percentile(r, 50, r->max_ns) / 1e6, percentile(r, 90, r->max_ns) / 1e6,
		       percentile(r, 99, r->max_ns) / 1e6, r->max_ns / 1e6, r->total_ns / 1e6 / r->count);
		print_states_json(r->state_ns, r->count);
		printf(",\"allocations_per_request\":%.3f,\"bytes_per_request\":%.3f,\"hist\":",
		       (double)r->allocations / r->count, (double)r->bytes / r->count);
		sq_json_log2_hist(stdout, r->slots, SQ_MAX_SLOTS);
		printf("}");
	}
	printf("]");
	if (env.slowest)
		print_slowest_json();
	printf(",\"lost\":%llu,\"nested\":%llu,\"began_before_trace\":%llu}\n", (unsigned long long)lost,
	       (unsigned long long)nested, (unsigned long long)unseen);
}

static int report(void *ctx, bool last)
{
	__u64 lost = sq_take(&skel->bss->lost), nested = sq_take(&skel->bss->nested),
	      unseen = sq_take(&skel->bss->unseen);
	struct row *rows;
	size_t n;
	int err = take_rows(&rows, &n);

	if (err) {
		fprintf(stderr, "sqreq: reading the counts: %s\n", strerror(-err));
		return err;
	}
	if (env.c.format == SQ_FORMAT_JSON) {
		print_json(rows, n, lost, nested, unseen);
	} else {
		print_text(rows, n);
		if (lost)
			printf("Lost %llu requests (a kernel map or the record buffer was full)\n", (unsigned long long)lost);
		if (nested)
			printf("%llu requests were begun while their process had one open: not followed\n",
			       (unsigned long long)nested);
		if (unseen)
			printf("%llu requests ended that began before tracing did: not counted\n", (unsigned long long)unseen);
	}
	fflush(stdout);
	free(rows);
	nslow = 0;
	return 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

static int attach_all(void)
{
	/* The GC probes first, then the batch that holds every other event (in order: a
	 * request is followed from its first nanosecond, and none is begun and not ended). */
	static const struct { const char *probe; int prog; } order[] = {
		{ "gc__incremental__end", 0 }, { "gc__full__end", 0 }, { "gc__incremental__begin", 1 },
		{ "gc__full__begin", 1 }, { "vm__start", 2 }, { "req__batch", 3 },
	};
	struct bpf_program *progs[] = { skel->progs.gc_end, skel->progs.gc_begin, skel->progs.vm_start,
					skel->progs.req_batch };
	int err = 0;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && !err; i++) {
		if (!strcmp(order[i].probe, "req__batch")) {
			sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms), "naming its methods");
			skel->bss->sq_batch_since_ns = sq_mono_ns();
		}
		err = sq_attach(&env.c, progs[order[i].prog], order[i].probe);
	}
	if (!err && env.slowest) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_period = 1000000000ULL / env.hz,
		};
		err = sq_attach_perf(skel->progs.cpu_sample, &attr);
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	int err;

	err = sq_start(&env.c, "sqreq", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	if (env.slowest && (err = sq_check_perf()))
		return SQ_EXIT_ERROR;
	skel = sqreq_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqreq: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->records = env.slowest > 0;
	skel->rodata->sample_ns = 1000000000ULL / env.hz;
	skel->rodata->only_pid = env.c.pid;
	if (!env.slowest) {
		bpf_program__set_autoload(skel->progs.cpu_sample, false);
		/* --slowest's maps at their least: a preallocated map costs its creation time
		 * at the attach (tests/bench/attach.sh) */
		bpf_map__set_max_entries(skel->maps.rb, 4096);
		bpf_map__set_max_entries(skel->maps.held_tops, 1);
		bpf_map__set_max_entries(skel->maps.traces, 1);
	}
	err = sqreq_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqreq: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	slow = calloc(env.slowest ? env.slowest : 1, sizeof(*slow));
	err = slow ? sq_loop_open(&loop, &env.c) : -ENOMEM;
	if (err)
		goto cleanup;
	if (env.slowest && (err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), handle_record, NULL)))
		goto cleanup;
	err = attach_all();
	if (err)
		goto cleanup;
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, "requests");
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqreq_bpf__destroy(skel);
	sq_names_free();
	free(slow);
	return err ? SQ_EXIT_ERROR : 0;
}
