// SPDX-License-Identifier: BSD-2-Clause
/* sqslow - a flight recorder per request: while attached it keeps the last W seconds of
 * a VM's history (green processes' states, requests, collections, I/O calls, timer and
 * allocation samples: tools/sqslow_window.c), and when a request ends slower than the
 * threshold it prints one line naming where the time went (the dominant state, the
 * method it was in, and for a Semaphore who held it and who signalled it) and writes
 * the window as a Trace Event Format file, DIR/sqslow-PID-ID-TIME.json (--format=perfetto:
 * Perfetto's protobuf trace, DIR/sqslow-PID-ID-TIME.pftrace). Also on a long
 * collection (--gc-over), a long wait (--wait-over) and on SIGUSR1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqfile.h"
#include "sqloop.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqslow.h"
#include "sqslow.skel.h"
#include "sqslow_merge.h"
#include "sqslow_replay.h"
#include "sqslow_ring.h"
#include "sqslow_switch.h"
#include "record_ring.h"
#include "sqslow_trace.h"
#include "sqslow_window.h"

#define OPT_OVER 0x2001
#define OPT_OUT 0x2002
#define OPT_ROUTE 0x2003
#define OPT_GC_OVER 0x2004
#define OPT_WAIT_OVER 0x2005
#define OPT_WINDOW 0x2006
#define OPT_CAPTURES 0x2007
#define OPT_IO_CALLS 0x2008

/* The window's bytes, at most (the issue's bound: 16 MiB). */
#define WINDOW_MAX_BYTES (16u << 20)
/* How often the window is trimmed to its age, in the records' time. */
#define TRIM_EVERY_NS 50000000ULL
/* History kept beyond W: the newest event seen may be later than a request's end by as
 * much as a batch arrives late (a sample is sent at once, a record when its batch is
 * flushed: probes/README.md, at most about 130 ms), and the window must still hold W
 * before the request's end. */
#define TRIM_SLACK_NS 250000000ULL

static struct env {
	struct sq_common c;
	__u64 over_ns;		/* --over */
	__u64 window_ns;	/* -w */
	const char *out;	/* --out */
	const char *route;	/* --route: a prefix */
	__u64 gc_over_ns;	/* --gc-over (0: off) */
	__u64 wait_over_ns;	/* --wait-over (0: off) */
	long hz;		/* -F */
	long captures;		/* --captures: files at most */
	bool io_calls;		/* --io-calls */
	bool json_captures;	/* --format=chrome (the default): captures as JSON */
	bool pf_captures;	/* --format=perfetto: as Perfetto's protobuf (both: each both ways) */
} env = { .over_ns = 50000000ULL, .window_ns = 2000000000ULL, .out = ".", .hz = 99, .captures = 100,
	.json_captures = true };

const char *argp_program_version = "sqslow (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"A flight recorder per request: keep the last seconds of an sqvm process's\n"
"history (green processes' states, requests, collections, stack and\n"
"allocation samples; I/O calls with --io-calls) and, for each request slower\n"
"than the threshold, print where its time went and write the window as a\n"
"Trace Event Format file (Perfetto, speedscope), or with --format=perfetto as\n"
"Perfetto's protobuf trace. SIGUSR1 writes the window.\n"
"\n"
"USAGE: sqslow [-h] [-p PID] [--vm PATH] [--over T] [-w W] [--out DIR]\n"
"              [--route R] [--gc-over T] [--wait-over T] [-F HZ]\n"
"              [--captures N] [--io-calls] [--format=text|json|chrome|perfetto]\n"
"              [-d DURATION] [-j] [-v]\n"
"\n"
"EXAMPLES:\n"
"    sqslow -p 185                # requests over 50 ms, captures in .\n"
"    sqslow -p 185 --over 20ms --out /var/tmp/slow\n"
"    sqslow -p 185 --route 'GET /kv' --over 100ms\n"
"    sqslow -p 185 --gc-over 10ms # and every pause over 10 ms\n"
"    sqslow -p 185 --format=perfetto   # captures as .pftrace, 1/3 the size\n"
"    kill -USR1 $(pgrep sqslow)   # write the current window\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "over", OPT_OVER, "T", 0, "A request slower than T is captured (default 50ms)", 0 },
	{ "window", 'w', "W", 0, "Keep the last W of history (default 2s; at most 16 MiB)", 0 },
	{ "out", OPT_OUT, "DIR", 0, "Write the captures into DIR (default .)", 0 },
	{ "route", OPT_ROUTE, "R", 0, "Only the requests whose route begins with R", 0 },
	{ "gc-over", OPT_GC_OVER, "T", 0, "Capture a collection pause over T too", 0 },
	{ "wait-over", OPT_WAIT_OVER, "T", 0, "Capture a Semaphore or I/O wait over T too", 0 },
	{ "frequency", 'F', "HZ", 0, "Stack samples per second (default 99, as sqprof's)", 0 },
	{ "captures", OPT_CAPTURES, "N", 0, "Write at most N capture files (default 100)", 0 },
	{ "io-calls", OPT_IO_CALLS, NULL, 0, "Keep every I/O call too (io__batch: its method, bytes, time), at a cost", 0 },
	{ "format", SQ_OPT_FORMAT, "FORMAT", 0, "text (default) or json (JSON lines, as -j) on stdout; chrome (default: "
	  "JSON captures), perfetto (Perfetto's protobuf captures, .pftrace) or chrome,perfetto (each capture both ways)", 0 },
	{},
};

static int parse_time(const char *arg, __u64 *ns, struct argp_state *state, const char *what)
{
	if (sq_parse_duration(arg, 1000000000ULL, ns) || !*ns)
		argp_error(state, "invalid %s '%s' (a duration: 50ms, 2s...)", what, arg);
	return 0;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case OPT_OVER:
		return parse_time(arg, &env.over_ns, state, "threshold");
	case 'w':
		parse_time(arg, &env.window_ns, state, "window");
		if (env.window_ns > 600000000000ULL)
			argp_error(state, "window '%s' too long (at most 10m)", arg);
		return 0;
	case OPT_GC_OVER:
		return parse_time(arg, &env.gc_over_ns, state, "pause");
	case OPT_WAIT_OVER:
		return parse_time(arg, &env.wait_over_ns, state, "wait");
	case OPT_OUT:
		env.out = arg;
		break;
	case OPT_ROUTE:
		env.route = arg;
		break;
	case 'F':
		if (sq_parse_long(arg, 1, 10000, &env.hz))
			argp_error(state, "invalid frequency '%s' (1 to 10000 Hz)", arg);
		break;
	case OPT_IO_CALLS:
		env.io_calls = true;
		break;
	case SQ_OPT_FORMAT:	/* the lines' format or the captures': -j keeps JSON lines either way */
		if (!strcmp(arg, "text"))
			env.c.format = SQ_FORMAT_TEXT;
		else if (!strcmp(arg, "json"))
			env.c.format = SQ_FORMAT_JSON;
		else if (!strcmp(arg, "chrome"))
			env.json_captures = true, env.pf_captures = false;
		else if (!strcmp(arg, "perfetto"))
			env.json_captures = false, env.pf_captures = true;
		else if (!strcmp(arg, "chrome,perfetto"))
			env.json_captures = env.pf_captures = true;
		else
			argp_error(state, "unknown format '%s' (text, json, chrome, perfetto or chrome,perfetto)", arg);
		break;
	case OPT_CAPTURES:
		if (sq_parse_long(arg, 0, 1000000, &env.captures))
			argp_error(state, "invalid number of captures '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ===================================================================== */
/* Names                                                                 */
/* ===================================================================== */

static struct sqslow_bpf *skel;

/* The processes' names, as the rings' slots carry them (tools/sqslow_ring.c):
 * direct-mapped by (VM, id), so bounded; a name that lost its place to another is learnt
 * again within a second (the VM sends each running process's name every second). */
#define NAMES_SLOTS 16384

static struct pname {
	__u32 pid;
	__u64 id;
	char name[SQ_RING_NAME_LEN];
} *pnames;

static struct pname *name_slot(__u32 pid, __u64 id)
{
	return &pnames[(id * 0x9e3779b97f4a7c15ULL ^ pid) % NAMES_SLOTS];
}

static void learn_name(void *ctx, __u32 pid, __u64 id, const char *name)
{
	struct pname *p = name_slot(pid, id);

	p->pid = pid;
	p->id = id;
	snprintf(p->name, sizeof(p->name), "%s", name);
}

static const char *process_name(void *ctx, __u32 pid, __u64 id)
{
	static char buf[4][SQ_RING_NAME_LEN + 24];
	static int turn;
	const struct pname *p = name_slot(pid, id);
	char *b = buf[turn++ % 4];

	if (p->pid == pid && p->id == id && p->name[0])
		snprintf(b, sizeof(buf[0]), "%s", p->name);
	else
		snprintf(b, sizeof(buf[0]), "process %llu", (unsigned long long)id);
	return b;
}

static const char *method_name(void *ctx, __u32 pid, __u64 m)
{
	const char *n = sq_map_method_name(bpf_map__fd(skel->maps.names), bpf_map__fd(skel->maps.vms), pid, m, NULL);

	return n ? n : "?";
}

static const char *addr_name(void *ctx, __u32 pid, __u64 addr)
{
	const char *n = sq_name(pid, addr, NULL, 0, NULL);

	return n ? n : "?";
}

static const struct sqslow_names names = { .process = process_name, .method = method_name, .name = addr_name };

/* ===================================================================== */
/* Captures                                                              */
/* ===================================================================== */

static struct sqslow_window window;
static struct sqslow_replay *live;
static __u64 since_ns, newest_ns, trimmed_at_ns;
static __u64 slow_count, captured, not_written, write_failed, busy;

struct capture_job {
	const struct sqslow_capture *c;
	bool pf;
	long events;
};

static int write_capture(FILE *f, void *ctx)
{
	struct capture_job *j = ctx;
	struct sqslow_trace_out out = j->pf ? sqslow_trace_perfetto(f) : sqslow_trace_json(f, &names);

	j->events = sqslow_trace_write(&out, &window, j->c, &names);
	return j->events < 0 ? -ENOMEM : 0;
}

/* Writes the window as DIR/sqslow-PID-WHAT-TIME.json, or .pftrace, or both (each a replay
 * of the same window: the same events) into path (the .json's if both); false if not. */
static bool write_files(struct sqslow_capture *c, const char *what, char *path, size_t len)
{
	struct capture_job j = { .c = c };
	char time[48];

	c->since_ns = since_ns;
	c->window_ns = env.window_ns;
	sq_format_iso_time(time, sizeof(time), c->end_ns);
	if (env.pf_captures) {
		j.pf = true;
		snprintf(path, len, "%s/sqslow-%u-%s-%s.pftrace", env.out, c->pid, what, time);
		if (sq_file_replace(path, 0644, write_capture, &j))
			return false;
		if (!env.json_captures)
			return true;
		j.pf = false;
	}
	snprintf(path, len, "%s/sqslow-%u-%s-%s.json", env.out, c->pid, what, time);
	return !sq_file_replace(path, 0644, write_capture, &j);
}

/* ---- The writers ----
 * A capture is written by a child process, whose copy of the window (fork's) is the
 * snapshot, while this one goes on draining the ring buffer: replaying and writing a
 * window takes tens to hundreds of milliseconds, and the ring buffer is kept small
 * (bpf/sqslow.bpf.c), so that a drain that stopped for as long would let it fill. The
 * child prints the trigger's line once its file is written (or says it is not), so a
 * line's path names a whole file; lines of writers that overlap may come out of order.
 * Writers run at nice 10, below the drain, and at most MAX_WRITING write at once (they
 * take turns through a pipe of tokens): a child forked meanwhile waits its turn with
 * its snapshot. Past MAX_WRITERS children a trigger is told without a capture (busy)
 * rather than stop the drain: under a flood of slow requests (examples/http under wrk,
 * --over 5ms: 74 in 5 s), waiting for a writer lost 2,070 messages to the full ring
 * buffer. A child waiting its turn keeps the pages of the window the parent has changed
 * since (copy on write): at most the window's 16 MiB each. */
#define MAX_WRITING 2
#define MAX_WRITERS 16

static pid_t writers[MAX_WRITERS];
static int nwriters;
static int tokens[2] = { -1, -1 };	/* the turns: MAX_WRITING bytes when none writes */

/* One writer's end (block: wait for one): counted as written or not. */
static bool reap(bool block)
{
	int status;
	pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);

	if (pid <= 0)
		return false;
	for (int i = 0; i < nwriters; i++)
		if (writers[i] == pid) {
			writers[i] = writers[--nwriters];
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
				captured++;
			} else {
				write_failed++;
				/* killed, perhaps in its turn: the turn goes back */
				if (!WIFEXITED(status) && write(tokens[1], "t", 1) != 1)
					sq_error("a capture writer's turn: %s", strerror(errno));
			}
			break;
		}
	return true;
}

static void reap_all(void)
{
	while (nwriters && reap(true))
		;
}

/* The turns' pipe, with MAX_WRITING in it; false if it cannot be made (then each
 * capture is written here, in turn with the drain). */
static bool writers_init(void)
{
	if (pipe2(tokens, O_CLOEXEC))
		return false;
	for (int i = 0; i < MAX_WRITING; i++)
		if (write(tokens[1], "t", 1) != 1) {
			/* a pipe short of turns would hold its writers back for good */
			close(tokens[0]);
			close(tokens[1]);
			tokens[0] = tokens[1] = -1;
			return false;
		}
	return true;
}

/* How a trigger's line is told: with the capture's path, or NULL if none was written. */
typedef void (*tell_fn)(const void *ctx, const char *path);

/* Captures the window for c (WHAT names the file) and tells of it, in a writer (or here,
 * if none can be made); beyond --captures, tells of it without a file. */
static void capture(struct sqslow_capture *c, const char *what, tell_fn tell, const void *ctx)
{
	char path[4096];
	bool ok;
	pid_t pid;

	while (reap(false))
		;
	if (captured + nwriters >= (__u64)env.captures || nwriters >= MAX_WRITERS) {
		captured + nwriters >= (__u64)env.captures ? not_written++ : busy++;
		tell(ctx, NULL);
		fflush(stdout);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid = tokens[0] >= 0 ? fork() : -1;
	if (pid == 0) {
		char turn;

		/* _exit: nothing of the parent's (its links, its maps) is torn down here */
		(void)setpriority(PRIO_PROCESS, 0, 10);	/* failing, the default: still correct */
		while (read(tokens[0], &turn, 1) < 0 && errno == EINTR)
			;
		ok = write_files(c, what, path, sizeof(path));
		tell(ctx, ok ? path : NULL);
		fflush(stdout);
		fflush(stderr);
		if (write(tokens[1], "t", 1) != 1)
			_exit(2);
		_exit(ok ? 0 : 1);
	}
	if (pid > 0) {
		writers[nwriters++] = pid;
		return;
	}
	ok = write_files(c, what, path, sizeof(path));
	ok ? captured++ : write_failed++;
	tell(ctx, ok ? path : NULL);
	fflush(stdout);
}

/* ===================================================================== */
/* The line                                                              */
/* ===================================================================== */

static const char *const heads[SQSLOW_NSTATES] = { "OTHER", "CPU", "RUNQ", "SEM", "DELAY", "IO", "GC", "OFFCPU" };
static const char *const keys[SQSLOW_NSTATES] = { "other", "cpu", "runq", "sem", "delay", "io", "gc", "offcpu" };

/* The innermost method of most of the request's timer samples (0: none). */
static __u64 top_sampled(const struct sqslow_request *q)
{
	struct { __u64 m, n; } top[16] = {};
	__u64 best = 0, most = 0;

	for (size_t i = 0; i < window.n; i++) {
		const struct sqslow_msg *m = sqslow_window_at(&window, i);
		const struct sqslow_sample *s = m->data;
		if (s->h.kind != SQSLOW_SAMPLE || s->h.pid != q->pid || s->process != q->process || !s->n ||
		    s->ts < q->begin_ns || s->ts > q->end_ns)
			continue;
		for (int k = 0; k < 16; k++)
			if (!top[k].n || top[k].m == s->methods[0]) {
				top[k].m = s->methods[0];
				if (++top[k].n > most) {
					most = top[k].n;
					best = top[k].m;
				}
				break;
			}
	}
	return best;
}

/* The method of the largest share of state in q (0: none). */
static __u64 top_share(const struct sqslow_request *q, __u32 state)
{
	__u64 best = 0, ns = 0;

	for (int i = 0; i < SQSLOW_SHARES; i++)
		if (q->shares[i].state == state && q->shares[i].ns > ns) {
			ns = q->shares[i].ns;
			best = q->shares[i].method;
		}
	return best;
}

static __u32 dominant(const struct sqslow_request *q)
{
	__u32 d = SQ_GREEN_RUNNING;

	for (__u32 s = 1; s < SQSLOW_NSTATES; s++)
		if (q->state_ns[s] > q->state_ns[d])
			d = s;
	return d;
}

/* "ROUTE id ID 31.2 ms: SEM 30.4 ms in M (held by H, woken by W), CPU 0.5 ms" into buf. */
static void format_line(const struct sqslow_request *q, __u32 d, __u64 method, char *buf, size_t len)
{
	size_t n;
	bool done[SQSLOW_NSTATES] = {};

	n = snprintf(buf, len, "%s id %llu %.1f ms: %s %.1f ms", sq_printable(addr_name(NULL, q->pid, q->route)),
		     (unsigned long long)q->id, (q->end_ns - q->begin_ns) / 1e6, heads[d], q->state_ns[d] / 1e6);
	if (method && n < len)
		n += snprintf(buf + n, len - n, " in %s", sq_printable(method_name(NULL, q->pid, method)));
	if (d == SQ_GREEN_GC && n < len)
		n += snprintf(buf + n, len - n, " (%s)", q->gc_full ? "full" : "young");
	if (d == SQ_GREEN_SEMAPHORE && (q->sem_holder || q->sem_waker) && n < len) {
		n += snprintf(buf + n, len - n, " (");
		if (q->sem_holder && n < len)
			n += snprintf(buf + n, len - n, "held by %s", sq_printable(process_name(NULL, q->pid, q->sem_holder)));
		if (q->sem_waker && n < len)
			n += snprintf(buf + n, len - n, "%swoken by %s", q->sem_holder ? ", " : "",
				      sq_printable(process_name(NULL, q->pid, q->sem_waker)));
		if (q->sem_waker && q->sem_waker_method && n < len)
			n += snprintf(buf + n, len - n, " in %s",
				      sq_printable(method_name(NULL, q->pid, q->sem_waker_method)));
		if (n < len)
			n += snprintf(buf + n, len - n, ")");
	}
	done[d] = true;
	/* the other states, largest first, from 0.05 ms */
	for (;;) {
		__u32 next = 0;
		for (__u32 s = 1; s < SQSLOW_NSTATES; s++)
			if (!done[s] && q->state_ns[s] >= 50000 && (!next || q->state_ns[s] > q->state_ns[next]))
				next = s;
		if (!next || n >= len)
			break;
		done[next] = true;
		n += snprintf(buf + n, len - n, ", %s %.1f ms", heads[next], q->state_ns[next] / 1e6);
	}
}

static void print_json(const struct sqslow_request *q, __u32 d, __u64 method, const char *path)
{
	printf("{\"type\":\"slow_request\",\"pid\":%u,\"id\":%llu,\"route\":", q->pid, (unsigned long long)q->id);
	sq_json_str(stdout, addr_name(NULL, q->pid, q->route));
	printf(",\"status\":%d,\"latency_ms\":%.6f,\"cause\":\"%s\",\"method\":", q->status,
	       (q->end_ns - q->begin_ns) / 1e6, keys[d]);
	if (method)
		sq_json_str(stdout, method_name(NULL, q->pid, method));
	else
		printf("null");
	if (d == SQ_GREEN_SEMAPHORE) {
		printf(",\"held_by\":");
		if (q->sem_holder)
			sq_json_str(stdout, process_name(NULL, q->pid, q->sem_holder));
		else
			printf("null");
		printf(",\"held_by_id\":%llu,\"woken_by\":", (unsigned long long)q->sem_holder);
		if (q->sem_waker)
			sq_json_str(stdout, process_name(NULL, q->pid, q->sem_waker));
		else
			printf("null");
		printf(",\"woken_by_id\":%llu,\"woken_in\":", (unsigned long long)q->sem_waker);
		if (q->sem_waker && q->sem_waker_method)
			sq_json_str(stdout, method_name(NULL, q->pid, q->sem_waker_method));
		else
			printf("null");
	}
	if (d == SQ_GREEN_GC)
		printf(",\"gc\":\"%s\"", q->gc_full ? "full" : "young");
	printf(",\"breakdown\":{");
	for (int s = 1; s < SQSLOW_NSTATES; s++)
		printf("%s\"%s_ms\":%.6f", s > 1 ? "," : "", keys[s], q->state_ns[s] / 1e6);
	printf("}");
	/* its W3C trace context, as sqreq -j writes it: null without one */
	if (q->span)
		printf(",\"trace_id\":\"%016llx%016llx\",\"span_id\":\"%016llx\",\"parent_span_id\":\"%016llx\"",
		       (unsigned long long)q->trace_hi, (unsigned long long)q->trace_lo, (unsigned long long)q->span,
		       (unsigned long long)q->parent);
	else
		printf(",\"trace_id\":null,\"span_id\":null,\"parent_span_id\":null");
	printf(",\"capture\":");
	if (path)
		sq_json_str(stdout, path);
	else
		printf("null");
	printf("}\n");
}

/* A trigger's text line: with " -> PATH" when its capture was written. */
static void print_line(const char *line, const char *path)
{
	printf("%s%s%s\n", line, path ? " -> " : "", path ? path : "");
}

/* A slow request's line, as it is told (tell_request). */
struct request_tell {
	const struct sqslow_request *q;
	__u32 d;
	__u64 method;
	const char *line;
};

static void tell_request(const void *ctx, const char *path)
{
	const struct request_tell *t = ctx;

	if (env.c.format == SQ_FORMAT_JSON)
		print_json(t->q, t->d, t->method, path);
	else
		print_line(t->line, path);
}

/* A request ended (the live replay): a slow one is told and captured. */
static void on_request(void *ctx, const struct sqslow_request *q)
{
	char line[1024], what[32];
	struct sqslow_capture c = { .trigger = "request", .req = q, .summary = line, .end_ns = q->end_ns,
				    .pid = q->pid };
	struct request_tell t = { .q = q, .line = line };

	if (q->end_ns - q->begin_ns <= env.over_ns)
		return;
	if (env.route && !sq_has_name_prefix(addr_name(NULL, q->pid, q->route), env.route))
		return;
	slow_count++;
	t.d = dominant(q);
	t.method = t.d == SQ_GREEN_RUNNING ? top_sampled(q) : top_share(q, t.d);
	format_line(q, t.d, t.method, line, sizeof(line));
	snprintf(what, sizeof(what), "%llu", (unsigned long long)q->id);
	capture(&c, what, tell_request, &t);
}

/* The end of a trigger's -j line (its head printed): the summary line and the capture's
 * path (NULL: none written). */
static void end_report(const char *line, const char *path)
{
	sq_json_str(stdout, line);
	printf(",\"capture\":");
	path ? sq_json_str(stdout, path) : (void)printf("null");
	printf("}\n");
}

/* A --wait-over or --gc-over line, as it is told (tell_trigger): the -j line's head,
 * then the summary line and the capture's path (end_report). */
struct trigger_tell {
	const char *line;
	char head[256];
};

static void tell_trigger(const void *ctx, const char *path)
{
	const struct trigger_tell *t = ctx;

	if (env.c.format == SQ_FORMAT_JSON) {
		fputs(t->head, stdout);
		end_report(t->line, path);
	} else {
		print_line(t->line, path);
	}
}

/* --wait-over: a Semaphore or I/O wait that lasted longer (a Delay is asked for). */
static void on_slice(void *ctx, __u32 pid, __u64 process, __u32 state, __u64 begin, __u64 end,
		     const struct sqslow_wait *w)
{
	char line[512];
	struct sqslow_capture c = { .trigger = "wait", .summary = line, .end_ns = end, .pid = pid };
	struct trigger_tell t = { .line = line };

	if (!env.wait_over_ns || (state != SQ_GREEN_SEMAPHORE && state != SQ_GREEN_IO) || end - begin <= env.wait_over_ns)
		return;
	snprintf(line, sizeof(line), "wait: %s (%llu) %s %.1f ms in %s", sq_printable(process_name(NULL, pid, process)),
		 (unsigned long long)process, heads[state], (end - begin) / 1e6,
		 w->method ? sq_printable(method_name(NULL, pid, w->method)) : "?");
	snprintf(t.head, sizeof(t.head), "{\"type\":\"slow_wait\",\"pid\":%u,\"process\":%llu,\"state\":\"%s\",\"ms\":%.6f,\"summary\":",
		 pid, (unsigned long long)process, keys[state], (end - begin) / 1e6);
	capture(&c, "wait", tell_trigger, &t);
}

/* --gc-over: a long pause. */
static void on_gc(void *ctx, __u32 pid, __u64 process, __u64 method, bool full, __u64 begin, __u64 end)
{
	char line[512];
	struct sqslow_capture c = { .trigger = "gc", .summary = line, .end_ns = end, .pid = pid };
	struct trigger_tell t = { .line = line };

	if (!env.gc_over_ns || end - begin <= env.gc_over_ns)
		return;
	snprintf(line, sizeof(line), "gc: %s pause %.1f ms in %s of %s", full ? "full" : "young", (end - begin) / 1e6,
		 method ? sq_printable(method_name(NULL, pid, method)) : "?",
		 process ? sq_printable(process_name(NULL, pid, process)) : "?");
	snprintf(t.head, sizeof(t.head), "{\"type\":\"slow_gc\",\"pid\":%u,\"full\":%s,\"ms\":%.6f,\"summary\":", pid,
		 full ? "true" : "false", (end - begin) / 1e6);
	capture(&c, "gc", tell_trigger, &t);
}

/* ===================================================================== */
/* The window                                                            */
/* ===================================================================== */

/* Drops what is older than W (and the slack) before the newest event, but nothing a request still open
 * began after (its capture must hold it whole, bytes allowing). */
static void trim(void)
{
	__u64 back = env.window_ns + TRIM_SLACK_NS, keep = newest_ns > back ? newest_ns - back : 0,
	      open = sqslow_replay_oldest_open(live);

	if (open < keep)
		keep = open;
	sqslow_window_trim(&window, keep);
	trimmed_at_ns = newest_ns;
}

static __u64 nmsgs[SQSLOW_CPU + 1];	/* by kind (bpf/sqslow.h) */

/* A message into the window and the live replay, in the order of the VM's history. */
static void take(const void *data, size_t size)
{
	__u64 ts = sqslow_msg_ts(data, size);

	if (size >= 4 && *(const __u32 *)data < sizeof(nmsgs) / sizeof(nmsgs[0]))
		nmsgs[*(const __u32 *)data]++;
	if (!ts)
		return;
	if (ts > newest_ns)
		newest_ns = ts;
	sqslow_window_add(&window, data, size, ts);
	sqslow_replay_feed(live, data, size);
	if (newest_ns - trimmed_at_ns > TRIM_EVERY_NS)
		trim();
}

/* A kernel message waits in the merge (tools/sqslow_merge.c) until its VM's batch
 * flushed after it has been read; one whose VM flushes nothing more goes after HOLD_NS:
 * a VM flushes at least every 130 ms while it has records (probes/README.md). */
#define HOLD_NS 250000000ULL

static struct sqslow_merge *merge;

static int hold(void *ctx, void *data, size_t size)
{
	__u64 ts = sqslow_msg_ts(data, size);

	if (!ts)	/* malformed (sqslow_msg_ts reads its head only when it has one) */
		take(data, size);	/* the replay counts it */
	else
		sqslow_merge_hold(merge, ((const struct sqslow_head *)data)->pid, ts, data, size);
	return sq_rb_yield();
}

/* A VM's batch, read from its ring: what happened before its flush goes first. */
static void ring_batch(void *ctx, __u32 pid, __u64 flush_ns, const void *msg, size_t size)
{
	if (flush_ns >= since_ns)	/* not a batch of a reader before this one */
		sqslow_merge_batch(merge, pid, flush_ns, msg, size);
}

static void ring_unreadable(void *ctx, __u32 pid, const char *why)
{
	sq_error("PID %u: %s; its requests are not followed", pid, why);
}

static struct sqslow_rings *rings;
static struct sqslow_switches *switches;
static struct sq_loop loop = SQ_LOOP_INIT;

/* A VM thread's context switch (tools/sqslow_switch.c), as the replay reads one. */
static void on_cpu(void *ctx, __u32 pid, __u64 ts, bool on)
{
	struct sqslow_cpu c = { .h = { .kind = SQSLOW_CPU, .pid = pid }, .ts = ts, .on = on };

	sqslow_merge_hold(merge, pid, ts, &c, sizeof(c));
}

/* What the kernel sent (its ring buffer, the VM threads' switches), then the VMs' new
 * batches, then what waited long enough. */
static void poll_all(bool last)
{
	static const struct sqslow_ring_sink sink = { .batch = ring_batch, .name = learn_name,
						      .unreadable = ring_unreadable };

	static __u32 pids[SQ_MAX_VMS], gone[SQ_MAX_VMS];
	int vms = bpf_map__fd(skel->maps.vms), n = 0, ngone = 0;
	__u32 key, prev = 0;

	sq_loop_drain(&loop, last ? 0 : 16);
	/* the VMs followed; one that exited is forgotten (the map, the rings, the switches) */
	while (n + ngone < SQ_MAX_VMS && !bpf_map_get_next_key(vms, n + ngone ? &prev : NULL, &key)) {
		prev = key;
		if (kill((pid_t)key, 0) && errno == ESRCH)
			gone[ngone++] = key;
		else
			pids[n++] = key;
	}
	for (int i = 0; i < ngone; i++)
		bpf_map_delete_elem(vms, &gone[i]);
	sqslow_switches_poll(switches, pids, n, on_cpu, NULL);
	sqslow_rings_poll(rings, pids, n, &sink);
	if (last)
		sqslow_merge_release_all(merge);
	else
		sqslow_merge_release(merge, sq_mono_ns() - HOLD_NS);
}

static void tell_window(const void *ctx, const char *path)
{
	if (env.c.format == SQ_FORMAT_JSON) {
		printf("{\"type\":\"window\",\"capture\":");
		path ? sq_json_str(stdout, path) : (void)printf("null");
		printf("}\n");
	} else {
		printf("window%s%s\n", path ? " -> " : ": not written", path ? path : "");
	}
}

/* SIGUSR1: the window now. */
static int on_usr1(void *ctx)
{
	int fd = *(int *)ctx;
	struct signalfd_siginfo si;
	char line[64];
	struct sqslow_capture c = { .trigger = "signal", .summary = line, .pid = env.c.pid };

	while (read(fd, &si, sizeof(si)) == sizeof(si))
		;
	poll_all(false);
	c.end_ns = newest_ns ? newest_ns : sq_mono_ns();
	snprintf(line, sizeof(line), "SIGUSR1: the window");
	capture(&c, "window", tell_window, NULL);
	return 0;
}

/* The drain's clock: the rings are read, the kernel's messages merged with them. */
static int on_poll(void *ctx)
{
	__u64 expirations;

	if (read(*(int *)ctx, &expirations, sizeof(expirations)) < 0)
		return 0;
	poll_all(false);
	while (reap(false))	/* the writers that ended, counted */
		;
	return 0;
}

static int report(void *ctx, bool last)
{
	__u64 lost, unreadable;

	if (!last)
		return 0;
	poll_all(true);	/* detached: the rings hold all there will be */
	/* kernel messages that found the ring buffer full, and batches the VMs overwrote
	 * before they were read; slots that were not the batch they should have been */
	lost = sq_take(&skel->bss->lost) + sqslow_rings_lost(rings) + sqslow_switches_lost(switches);
	unreadable = sqslow_rings_bad(rings);
	reap_all();	/* every capture written before the summary counts them */
	if (env.c.verbose)
		fprintf(stderr, "sqslow: messages: %llu batches, %llu collections, %llu samples, "
			"%llu context switches; %llu records out of order, %llu malformed\n",
			(unsigned long long)nmsgs[SQSLOW_BATCH], (unsigned long long)nmsgs[SQSLOW_GC],
			(unsigned long long)nmsgs[SQSLOW_SAMPLE], (unsigned long long)nmsgs[SQSLOW_CPU],
			(unsigned long long)sqslow_replay_reordered(live), (unsigned long long)sqslow_replay_malformed(live));
	if (env.c.format == SQ_FORMAT_JSON) {
		printf("{\"type\":\"summary\",\"slow\":%llu,\"captured\":%llu,\"not_written\":%llu,"
		       "\"busy\":%llu,\"write_failed\":%llu,\"lost\":%llu,\"unreadable\":%llu,\"not_followed\":%llu,\"reordered\":%llu,\"malformed\":%llu,"
		       "\"window_cut_for_bytes\":%llu}\n",
		       (unsigned long long)slow_count, (unsigned long long)captured, (unsigned long long)not_written,
		       (unsigned long long)busy, (unsigned long long)write_failed, (unsigned long long)lost, (unsigned long long)unreadable,
		       (unsigned long long)sqslow_replay_unseen(live), (unsigned long long)sqslow_replay_reordered(live),
		       (unsigned long long)sqslow_replay_malformed(live), (unsigned long long)window.cut_for_bytes);
	} else {
		fprintf(stderr, "sqslow: %llu slow requests, %llu captures written", (unsigned long long)slow_count,
			(unsigned long long)captured);
		if (not_written)
			fprintf(stderr, ", %llu not (--captures)", (unsigned long long)not_written);
		if (busy)
			fprintf(stderr, ", %llu not (%d captures waiting or being written)", (unsigned long long)busy,
				MAX_WRITERS);
		if (write_failed)
			fprintf(stderr, ", %llu could not be written", (unsigned long long)write_failed);
		fprintf(stderr, "\n");
		if (lost || unreadable)
			fprintf(stderr, "sqslow: lost %llu messages or batches (a ring was full), %llu batches unreadable\n",
				(unsigned long long)lost, (unsigned long long)unreadable);
		if (window.cut_for_bytes)
			fprintf(stderr, "sqslow: the window was cut to 16 MiB %llu times\n",
				(unsigned long long)window.cut_for_bytes);
	}
	fflush(stdout);
	return 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

static int attach_all(void)
{
	/* the ends of collections before their begins; the records' switches last, from now,
	 * and the ring's after the kinds it keeps */
	static const struct { const char *probe; int prog; } order[] = {
		{ "gc__incremental__end", 0 }, { "gc__full__end", 1 }, { "gc__incremental__begin", 2 },
		{ "gc__full__begin", 3 },      { "vm__start", 4 },      { "sample__records", 5 },
		{ "io__records", 5 },          { "req__records", 5 },   { "sched__records", 5 },
		{ "ring__records", 5 },
	};
	struct bpf_program *progs[] = { skel->progs.gc_incremental_end, skel->progs.gc_full_end,
					skel->progs.gc_incremental_begin, skel->progs.gc_full_begin,
					skel->progs.vm_start, skel->progs.record_switch };
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / env.hz,
	};
	int err = 0;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && !err; i++) {
		if (!strcmp(order[i].probe, "sample__records"))
			sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms), "reading its stack");
		if (!strcmp(order[i].probe, "io__records")) {
			since_ns = sq_mono_ns();
			live = sqslow_replay_new(since_ns, &(struct sqslow_sink){ .request = on_request, .slice = on_slice,
										 .gc = on_gc });
			if (!live)
				return -ENOMEM;
		}
		if (!env.io_calls && !strcmp(order[i].probe, "io__records"))
			continue;
		err = sq_attach(&env.c, progs[order[i].prog], order[i].probe);
	}
	if (!err)
		err = sq_attach_perf(skel->progs.cpu_sample, &attr);
	return err;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, NULL, doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct stat st;
	sigset_t usr1;
	int err, usr1_fd = -1, poll_fd = -1;
	const char *why;
	struct itimerspec poll_every = { .it_interval = { .tv_nsec = SQSLOW_POLL_MS * 1000000L },
					 .it_value = { .tv_nsec = SQSLOW_POLL_MS * 1000000L } };

	err = sq_start(&env.c, "sqslow", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	if (stat(env.out, &st) || !S_ISDIR(st.st_mode)) {
		sq_error("--out %s: not a folder", env.out);
		return SQ_EXIT_USAGE;
	}
	if ((err = sq_check_perf()))
		return SQ_EXIT_ERROR;
	sqslow_window_init(&window, WINDOW_MAX_BYTES);
	rings = sqslow_rings_new();
	switches = sqslow_switches_new();
	merge = sqslow_merge_new(take);
	pnames = calloc(NAMES_SLOTS, sizeof(*pnames));
	if (!rings || !switches || !merge || !pnames) {
		sq_error("out of memory");
		return SQ_EXIT_ERROR;
	}
	if (!writers_init())
		sq_error("no pipe for the capture writers' turns (%s): captures are written in turn with the drain",
			strerror(errno));
	skel = sqslow_bpf__open_opts(&open_opts);
	if (!skel) {
		sq_error("cannot open the BPF object: %s", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->only_pid = env.c.pid;
	err = sqslow_bpf__load(skel);
	if (err) {
		sq_error("cannot load the BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	/* SIGUSR1 through a descriptor the loop watches, as SIGINT is */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) || (usr1_fd = signalfd(-1, &usr1, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		err = -errno;
		sq_error("SIGUSR1: %s", strerror(errno));
		goto cleanup;
	}
	poll_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (poll_fd < 0 || timerfd_settime(poll_fd, 0, &poll_every, NULL)) {
		err = -errno;
		sq_error("the drain's timer: %s", strerror(errno));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	if ((err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), hold, NULL)) ||
	    (err = sq_loop_watch(&loop, usr1_fd, on_usr1, &usr1_fd)) ||
	    (err = sq_loop_watch(&loop, poll_fd, on_poll, &poll_fd)))
		goto cleanup;
	err = attach_all();
	if (err)
		goto cleanup;
	if (env.c.pid && !sqslow_ring_usable(env.c.pid, &why)) {
		sq_error("PID %d: %s", env.c.pid, why);
		err = -EINVAL;
		goto cleanup;
	}
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, "slow requests");
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	if (usr1_fd >= 0)
		close(usr1_fd);
	if (poll_fd >= 0)
		close(poll_fd);
	sqslow_bpf__destroy(skel);
	sqslow_replay_free(live);
	sqslow_rings_free(rings);
	sqslow_switches_free(switches);
	free(pnames);
	sqslow_merge_free(merge);
	sqslow_window_free(&window);
	sq_names_free();
	return err ? SQ_EXIT_ERROR : 0;
}
