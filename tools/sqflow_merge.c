// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_merge.c - a browser's trace into sqflow's Chrome trace (sqflow_merge.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqflow_merge.h"
#include "sqjson.h"
#include "sqoutput.h"

/* The fetches tracks' thread ids: above any Linux tid (pid_max is at most 2^22), so that
 * none is a real thread of the renderer; one lane per fetch in flight at once. */
#define FETCH_TID (1u << 22)
#define FETCH_LANES 16

#define TRACEPARENT_LEN 55	/* "00-" 32 hex "-" 16 hex "-" 2 hex */

/* A performance.measure begin or end named "fetch TRACEPARENT URL". */
struct measure {
	const char *name;
	double ts;
	__u32 pid;
	bool begin;
};

struct fetch {
	double begin, end;	/* µs, CLOCK_MONOTONIC */
	const char *name;	/* the measure's */
	__u64 trace_hi, trace_lo, span;
	__u32 pid, tid;
};

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO given as the trace must not hang sqflow (it is then refused) */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t n = 0;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (off_t)SQFLOW_MERGE_MAX_BYTES) {
		snprintf(err, errlen, "%s is not a regular file of at most %u MiB", path, SQFLOW_MERGE_MAX_BYTES >> 20);
		close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading %s", path);
		close(fd);
		return -1;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* upper case too: W3C Trace Context's ids are lower-case hex */
}

static bool hex64(const char *s, size_t n, __u64 *out)
{
	__u64 v = 0;

	for (size_t i = 0; i < n; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return false;
		v = v << 4 | (__u64)d;
	}
	*out = v;
	return true;
}

/* The ids of a name "fetch 00-TRACE-SPAN-FLAGS URL"; false for any other name, and for
 * the specification's invalid ids (all zeros). */
static bool fetch_ids(const char *name, __u64 *hi, __u64 *lo, __u64 *span)
{
	const char *tp = name + 6;
	__u64 flags;

	if (strncmp(name, "fetch ", 6) || strnlen(tp, TRACEPARENT_LEN + 1) < TRACEPARENT_LEN + 1)
		return false;
	if (strncmp(tp, "00-", 3) || tp[35] != '-' || tp[52] != '-' || tp[TRACEPARENT_LEN] != ' ')
		return false;
	if (!hex64(tp + 3, 16, hi) || !hex64(tp + 19, 16, lo) || !hex64(tp + 36, 16, span) ||
	    !hex64(tp + 53, 2, &flags))
		return false;
	return (*hi | *lo) && *span;
}

/* An event's pid: a double that may be anything (converting one out of __u32's range is
 * undefined behaviour), 0 where it is not a pid. */
static __u32 pid_of(const struct sq_jv *e)
{
	double pid = sq_jv_num(e, "pid", 0);

	return pid >= 0 && pid <= (double)UINT32_MAX ? (__u32)pid : 0;
}

/* A fetch measure's begin or end: a user-timing async event with a fetch's name. */
static bool measure_of(const struct sq_jv *e, struct measure *m)
{
	const char *ph = sq_jv_str(e, "ph"), *cat = sq_jv_str(e, "cat"), *name = sq_jv_str(e, "name");
	__u64 hi, lo, span;

	if (!ph || !cat || !name || (strcmp(ph, "b") && strcmp(ph, "e")) || !strstr(cat, "blink.user_timing"))
		return false;
	if (!fetch_ids(name, &hi, &lo, &span))
		return false;
	*m = (struct measure){ .name = name, .ts = sq_jv_num(e, "ts", 0), .pid = pid_of(e), .begin = ph[0] == 'b' };
	return true;
}

static int by_pid_name_ts(const void *a, const void *b)
{
	const struct measure *x = a, *y = b;
	int c = x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (int)y->begin - (int)x->begin;	/* at one time, the begin first */
}

static int by_pid_begin(const void *a, const void *b)
{
	const struct fetch *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int cmp_u64(__u64 a, __u64 b)
{
	return a < b ? -1 : a > b;
}

static int by_trace_parent(const void *a, const void *b)
{
	const struct sqflow_merge_request *x = a, *y = b;
	int c = cmp_u64(x->trace_hi, y->trace_hi);

	if (!c)
		c = cmp_u64(x->trace_lo, y->trace_lo);
	if (!c)
		c = cmp_u64(x->parent, y->parent);
	return c ? c : cmp_u64(x->begin_ns, y->begin_ns);
}

/* Pairs the measures (sorted) into fetches; answers their number. */
static size_t pair(struct measure *m, size_t n, struct fetch *out, struct sqflow_merge_stats *st)
{
	size_t k = 0;

	if (n)	/* m is NULL with no measures: qsort's pointer must not be */
		qsort(m, n, sizeof(*m), by_pid_name_ts);
	for (size_t i = 0; i < n; i++) {
		if (m[i].begin && i + 1 < n && !m[i + 1].begin && m[i + 1].pid == m[i].pid &&
		    !strcmp(m[i + 1].name, m[i].name)) {
			struct fetch *f = &out[k++];

			*f = (struct fetch){ .begin = m[i].ts, .end = m[i + 1].ts, .name = m[i].name, .pid = m[i].pid };
			fetch_ids(f->name, &f->trace_hi, &f->trace_lo, &f->span);
			i++;
		} else
			st->unpaired++;
	}
	return k;
}

static void write_us_ns(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

/* Each fetch on a lane of its renderer's fetches tracks where it overlaps no other (so
 * that the slices of a track nest), the tracks named as they are first used. */
static void place(FILE *out, struct fetch *f, size_t n)
{
	double lane_end[FETCH_LANES];
	unsigned lanes = 0;

	if (n)
		qsort(f, n, sizeof(*f), by_pid_begin);
	for (size_t i = 0; i < n; i++) {
		unsigned l = 0;

		if (i == 0 || f[i].pid != f[i - 1].pid)
			lanes = 0;
		while (l < lanes && lane_end[l] > f[i].begin)
			l++;
		if (l == FETCH_LANES)
			l = FETCH_LANES - 1;	/* more in flight than lanes: the last takes them */
		if (l == lanes) {
			lanes++;
			fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
				"\"args\":{\"name\":\"fetches%s\"}}", f[i].pid, FETCH_TID + l, l ? " (overlapping)" : "");
		}
		lane_end[l] = f[i].end;
		f[i].tid = FETCH_TID + l;
	}
}

static void write_fetch(FILE *out, const struct fetch *f)
{
	const char *tp = f->name + 6, *url = tp + TRACEPARENT_LEN + 1;
	char buf[TRACEPARENT_LEN + 1];

	fprintf(out, ",\n{\"name\":");
	{
		char *name = NULL;

		if (asprintf(&name, "fetch %s", url) < 0)
			name = NULL;
		sq_json_str(out, name ? name : "fetch");
		free(name);
	}
	fprintf(out, ",\"cat\":\"fetch\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%u,\"tid\":%u,\"args\":{\"url\":",
		f->begin, f->end > f->begin ? f->end - f->begin : 0, f->pid, f->tid);
	sq_json_str(out, url);
	memcpy(buf, tp, TRACEPARENT_LEN);
	buf[TRACEPARENT_LEN] = '\0';
	fprintf(out, ",\"traceparent\":\"%s\",\"trace_id\":\"%016llx%016llx\",\"span_id\":\"%016llx\"}}", buf,
		(unsigned long long)f->trace_hi, (unsigned long long)f->trace_lo, (unsigned long long)f->span);
}

/* A flow from fetch f to request r, and on from r to the first slice that begins in it
 * (its first method): begun within the fetch (at the request's begin when the clocks
 * agree), stepping into the request 1 ns after its begin (the deepest slice open then),
 * ending at the next slice to begin. */
static void write_flow(FILE *out, unsigned long id, const struct fetch *f, const struct sqflow_merge_request *r,
		       bool inside)
{
	const char *head = ",\n{\"name\":\"fetch to request\",\"cat\":\"sqflow.merge\",\"ph\":";

	fprintf(out, "%s\"s\",\"id\":%lu,\"ts\":", head, id);
	if (inside)
		write_us_ns(out, r->begin_ns);
	else
		fprintf(out, "%.3f", (f->begin + f->end) / 2);
	fprintf(out, ",\"pid\":%u,\"tid\":%u}", f->pid, f->tid);
	fprintf(out, "%s\"t\",\"id\":%lu,\"ts\":", head, id);
	write_us_ns(out, r->begin_ns + 1);
	fprintf(out, ",\"pid\":%u,\"tid\":%u}", r->pid, r->tid);
	fprintf(out, "%s\"f\",\"id\":%lu,\"ts\":", head, id);
	write_us_ns(out, r->begin_ns + 1);
	fprintf(out, ",\"pid\":%u,\"tid\":%u}", r->pid, r->tid);
}

static void link_fetches(FILE *out, const struct fetch *f, size_t nf, struct sqflow_merge_request *reqs, size_t n,
			 struct sqflow_merge_stats *st)
{
	unsigned long id = 0;

	if (n)	/* reqs is NULL when the server had no traced request */
		qsort(reqs, n, sizeof(*reqs), by_trace_parent);
	for (size_t i = 0; i < nf; i++) {
		struct sqflow_merge_request key = { .trace_hi = f[i].trace_hi, .trace_lo = f[i].trace_lo,
						    .parent = f[i].span };
		size_t lo = 0, hi = n;

		/* the first request of the fetch's trace and span, then each after it */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct sqflow_merge_request *r = &reqs[mid];

			if (cmp_u64(r->trace_hi, key.trace_hi) < 0 ||
			    (r->trace_hi == key.trace_hi && (cmp_u64(r->trace_lo, key.trace_lo) < 0 ||
			     (r->trace_lo == key.trace_lo && r->parent < key.parent))))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo; j < n && reqs[j].trace_hi == key.trace_hi && reqs[j].trace_lo == key.trace_lo &&
				    reqs[j].parent == key.parent; j++) {
			/* a request cannot begin before its fetch asked, nor after it was answered;
			 * it can end after, its answer already on the way */
			bool inside = reqs[j].begin_ns / 1e3 >= f[i].begin && reqs[j].begin_ns / 1e3 <= f[i].end;

			write_flow(out, ++id, &f[i], &reqs[j], inside);
			st->linked++;
			st->inside += inside;
			st->ended_after += inside && reqs[j].end_ns / 1e3 > f[i].end;
		}
	}
}

int sqflow_merge_browser(FILE *out, const char *path, struct sqflow_merge_request *reqs, size_t n,
			 struct sqflow_merge_stats *st, char *err, size_t errlen)
{
	char *text, perr[160];
	size_t len, nm = 0, cap = 0, nf;
	struct sq_jv *root;
	const struct sq_jv *events;
	struct measure *m = NULL;
	struct fetch *f;

	*st = (struct sqflow_merge_stats){ 0 };
	if (read_file(path, &text, &len, err, errlen))
		return -1;
	root = sq_jv_parse(text, len, perr, sizeof(perr));
	free(text);
	if (!root) {
		snprintf(err, errlen, "%s is not JSON: %s", path, perr);
		return -1;
	}
	/* the JSON Object Format ({"traceEvents": [...]}) or the JSON Array Format */
	events = root->type == SQ_JSON_ARRAY ? root : sq_jv_get(root, "traceEvents");
	if (!events || events->type != SQ_JSON_ARRAY) {
		snprintf(err, errlen, "%s is not a trace: no traceEvents array", path);
		sq_jv_free(root);
		return -1;
	}
	for (const struct sq_jv *e = sq_jv_first(events); e; e = e->next) {
		struct measure one;

		if (e->type != SQ_JSON_OBJECT)
			continue;
		if (measure_of(e, &one)) {
			if (nm == cap) {
				struct measure *more = reallocarray(m, cap ? cap * 2 : 256, sizeof(*m));

				if (!more)
					break;
				m = more;
				cap = cap ? cap * 2 : 256;
			}
			m[nm++] = one;
			continue;
		}
		fputs(",\n", out);
		sq_jv_write(out, e);
		st->events++;
	}
	f = calloc(nm ? nm : 1, sizeof(*f));
	if (f) {
		nf = pair(m, nm, f, st);
		st->fetches = nf;
		place(out, f, nf);
		for (size_t i = 0; i < nf; i++)
			write_fetch(out, &f[i]);
		link_fetches(out, f, nf, reqs, n, st);
		free(f);
	}
	free(m);
	sq_jv_free(root);
	return 0;
}
