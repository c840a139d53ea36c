// SPDX-License-Identifier: BSD-2-Clause
/* sqflow - the method call flow of sqvm processes: an indented line per method (and
 * block) entry and return, per thread, with each call's duration; or a trace that
 * Perfetto opens: Chrome trace-event JSON (also chrome://tracing), or Perfetto's own
 * protobuf. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqflow.h"
#include "sqflow_chrome.h"
#include "sqflow_perfetto.h"
#include "sqflow.skel.h"
#include "sqloop.h"
#include "sqnames.h"
#include "sqoutput.h"

#define OPT_NO_BLOCKS 0x2001
#define OPT_BUFFER 0x2002
#define OPT_MERGE 0x2003

static struct env {
	struct sq_common c;
	const char *class_prefix;	/* -C */
	const char *sel_prefix;		/* -M */
	long max_depth;			/* -D; 0: no limit */
	bool no_blocks;			/* --no-blocks */
	__u64 buffer;			/* --buffer: ring buffer bytes */
	const char *merge;		/* --merge: a browser's trace */
	bool format_given;		/* --format */
} env = { .buffer = 8 << 20 };

const char *argp_program_version = "sqflow (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Trace the method calls of sqvm processes: entries and returns, by depth.\n"
"\n"
"USAGE: sqflow [-h] [-p PID] [--vm PATH] [-C CLASS] [-M SELECTOR] [-D DEPTH]\n"
"              [--no-blocks] [--format=text|json|chrome|perfetto]\n"
"              [--merge FILE] [--buffer SIZE] [-d DURATION] [-T] [-j] [-v]\n"
"              [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqflow -p 185                  # every method and block call until Ctrl-C\n"
"    sqflow -p 185 -C Point         # calls to Point..., or defined there\n"
"    sqflow -p 185 -M print         # calls of selectors beginning with print\n"
"    sqflow -p 185 -D 3 --no-blocks # only the outer 3 levels, methods only\n"
"    sqflow -p 185 -T               # with a time stamp on each line\n"
"    sqflow -p 185 --format=chrome > trace.json   # open in ui.perfetto.dev\n"
"    sqflow -p 185 --format=perfetto > trace.pftrace   # the same, 1/3 the size\n"
"    sqflow -p 185 --merge browser.json > both.json    # with Chromium's trace\n"
"    sqflow --vm build/sqvm -C Main # every process of build/sqvm, new ones too\n"
"    sqflow -p 185 10 1             # trace for 10 seconds\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "class", 'C', "CLASS", 0, "Only calls whose receiver's or defining class begins with CLASS", 0 },
	{ "selector", 'M', "SELECTOR", 0, "Only calls whose selector begins with SELECTOR", 0 },
	{ "max-depth", 'D', "DEPTH", 0, "Only calls less than DEPTH frames deep in the Smalltalk stack (0: the outermost)", 0 },
	{ "no-blocks", OPT_NO_BLOCKS, NULL, 0, "Methods only: do not trace block activations", 0 },
	{ "format", SQ_OPT_FORMAT, "FORMAT", 0, "text (default), json (JSON lines, as -j), chrome or perfetto", 0 },
	{ "buffer", OPT_BUFFER, "SIZE", 0, "Ring buffer size (default 8M; K and M suffixes)", 0 },
	{ "merge", OPT_MERGE, "BROWSER_TRACE", 0,
	  "Put a browser's trace (Chromium's JSON) into the Chrome trace when it ends, on one clock, "
	  "its fetches linked to the requests they made (implies --format=chrome)", 0 },
	{},
};

static int parse_size(const char *s, __u64 *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v == 0 || v > (1ULL << 30))
		return -EINVAL;
	*out = v;
	return 0;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'C':
	case 'M':
		if (!*arg)
			argp_error(state, "empty %s prefix", key == 'C' ? "class" : "selector");
		*(key == 'C' ? &env.class_prefix : &env.sel_prefix) = arg;
		break;
	case 'D':
		if (sq_parse_long(arg, 1, 1000000, &env.max_depth))
			argp_error(state, "invalid depth '%s'", arg);
		break;
	case OPT_NO_BLOCKS:
		env.no_blocks = true;
		break;
	case SQ_OPT_FORMAT:
		env.format_given = true;
		if (strcmp(arg, "text") == 0)
			env.c.format = SQ_FORMAT_TEXT;
		else if (strcmp(arg, "json") == 0)
			env.c.format = SQ_FORMAT_JSON;
		else if (strcmp(arg, "chrome") == 0)
			env.c.format = SQ_FORMAT_CHROME;
		else if (strcmp(arg, "perfetto") == 0 && isatty(STDOUT_FILENO))
			argp_error(state, "--format=perfetto writes binary protobuf: redirect it to a file");
		else if (strcmp(arg, "perfetto") == 0)
			env.c.format = SQ_FORMAT_PERFETTO;
		else
			argp_error(state, "unknown format '%s' (text, json, chrome or perfetto)", arg);
		break;
	case OPT_MERGE:
		if (!*arg)
			argp_error(state, "--merge needs the browser trace's file name");
		env.merge = arg;
		break;
	case ARGP_KEY_END:
		if (env.merge && env.c.format != SQ_FORMAT_CHROME && (env.format_given || env.c.format != SQ_FORMAT_TEXT))
			argp_error(state, "--merge writes a Chrome trace: it goes with --format=chrome only");
		if (env.merge)
			env.c.format = SQ_FORMAT_CHROME;
		break;
	case OPT_BUFFER:
		if (parse_size(arg, &env.buffer))
			argp_error(state, "invalid buffer size '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The event's names, whole (sqnames.h): the BPF side copies SQ_NAME_LEN - 1 bytes. */
struct names {
	const char *recv, *sel, *def;
};

static int names_fd = -1;	/* the BPF side's longer copies of long names */
static int proc_names_fd = -1;	/* the BPF side's names of green processes */

static const char *name_of(const struct sqflow_event *e, __u64 addr, const char *copy)
{
	/* a copy that fills its field was cut short: the names map has a longer one */
	const char *name = strnlen(copy, SQ_NAME_LEN) < SQ_NAME_LEN - 1
				   ? sq_name(e->pid, addr, copy, SQ_NAME_LEN, NULL)
				   : sq_map_name_or(names_fd, e->pid, addr, copy, SQ_NAME_LEN, NULL);

	return name ? name : "?";
}

static void names_of(const struct sqflow_event *e, struct names *n)
{
	n->recv = name_of(e, e->recv_addr, e->recv_class);
	n->sel = name_of(e, e->sel_addr, e->selector);
	n->def = name_of(e, e->def_addr, e->def_class);
}

/* The BPF side compared the first SQ_NAME_LEN - 1 bytes of a -C or -M prefix; the rest
 * of a longer one is checked here, against the whole names. */
static bool wanted(const struct names *n)
{
	return sq_has_name_prefix(n->sel, env.sel_prefix) &&
	       (sq_has_name_prefix(n->recv, env.class_prefix) || sq_has_name_prefix(n->def, env.class_prefix));
}

/* "Point>>x", "Point(Object)>>printString", "[] in Point>>foo"; malloc'ed. */
static char *call_name(const struct sqflow_event *e, const struct names *n)
{
	const char *block = e->block ? "[] in " : "";
	char *s = NULL;
	int r;

	if (strcmp(n->recv, n->def) == 0 || !n->def[0])
		r = asprintf(&s, "%s%s>>%s", block, n->recv, n->sel);
	else
		r = asprintf(&s, "%s%s(%s)>>%s", block, n->recv, n->def, n->sel);
	return r < 0 ? NULL : s;
}

/* ===================================================================== */
/* Text and JSON lines                                                   */
/* ===================================================================== */

static __u64 nevents;
static struct sqflow_slices *slices;	/* --format=chrome or perfetto */

static void print_text(const struct sqflow_event *e, const struct names *n)
{
	char *name = call_name(e, n), time[48];
	int indent = e->depth > 200 ? 200 : (int)e->depth;

	if (env.c.timestamp) {
		sq_format_time(time, sizeof(time), e->ts_ns, true);
		printf("%-15s ", time);
	}
	printf("%-7u %-7u %*s%s %s", e->pid, e->tid, 2 * indent, "",
	       e->type == SQFLOW_ENTRY ? "->" : "<-", sq_printable(name));
	if (e->type == SQFLOW_RETURN && e->paired) {
		if (e->duration_ns < 1000000)
			printf("  %.3f us", e->duration_ns / 1e3);
		else if (e->duration_ns < 1000000000)
			printf("  %.3f ms", e->duration_ns / 1e6);
		else
			printf("  %.3f s", e->duration_ns / 1e9);
	}
	putchar('\n');
	free(name);
}

static void print_json(const struct sqflow_event *e, const struct names *n)
{
	char *name = call_name(e, n), time[48];

	sq_format_iso_time(time, sizeof(time), e->ts_ns);
	printf("{\"time\":\"%s\",\"ts_ns\":%llu,\"pid\":%u,\"tid\":%u,\"process\":%llu,\"event\":\"%s\","
	       "\"kind\":\"%s\",\"depth\":%u,\"name\":", time, (unsigned long long)e->ts_ns, e->pid, e->tid,
	       (unsigned long long)e->process, e->type == SQFLOW_ENTRY ? "entry" : "return", e->block ? "block" : "method", e->depth);
	sq_json_str(stdout, name ? name : "?");
	printf(",\"class\":");
	sq_json_str(stdout, n->recv);
	printf(",\"selector\":");
	sq_json_str(stdout, n->sel);
	printf(",\"defining_class\":");
	sq_json_str(stdout, n->def);
	printf(",\"frame\":\"0x%llx\"", (unsigned long long)e->frame);
	if (e->type == SQFLOW_RETURN && e->paired)
		printf(",\"duration_ns\":%llu", (unsigned long long)e->duration_ns);
	printf("}\n");
	free(name);
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

/* A whole request (the ring buffer's other record): a slice of the trace; the other
 * formats are the calls' alone. */
static void handle_request(const struct sqflow_request *r)
{
	char copy[SQ_NAME_LEN];
	const char *route;

	if (!slices)
		return;
	memcpy(copy, r->route, sizeof(copy));
	copy[SQ_NAME_LEN - 1] = '\0';
	route = strnlen(copy, SQ_NAME_LEN) < SQ_NAME_LEN - 1
			? copy
			: sq_map_name_or(names_fd, r->pid, r->route_addr, copy, SQ_NAME_LEN, NULL);
	sqflow_slices_request(slices, r, route ? route : copy);
}

_Static_assert(sizeof(struct sqflow_request) != sizeof(struct sqflow_event), "told apart by size");

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct sqflow_event *e = data;
	struct names n;

	if (size == sizeof(struct sqflow_request)) {
		handle_request(data);
		return sq_rb_yield();
	}
	if (size < sizeof(*e))
		return 0;

	names_of(e, &n);
	if (!wanted(&n))
		return 0;
	nevents++;
	if (slices)
		sqflow_slices_event(slices, e, call_name(e, &n));
	else if (env.c.format == SQ_FORMAT_JSON)
		print_json(e, &n);
	else
		print_text(e, &n);
	return sq_rb_yield();
}

static void print_lost(__u64 lost)
{
	if (env.c.format == SQ_FORMAT_CHROME || env.c.format == SQ_FORMAT_PERFETTO) {
		if (lost)
			fprintf(stderr, "sqflow: lost %llu events (ring buffer full: try a larger --buffer)\n",
				(unsigned long long)lost);
	} else if (env.c.format == SQ_FORMAT_JSON) {
		printf("{\"type\":\"summary\",\"events\":%llu,\"lost\":%llu}\n",
		       (unsigned long long)nevents, (unsigned long long)lost);
	} else if (lost) {
		printf("Lost %llu events (ring buffer full: try a larger --buffer)\n",
		       (unsigned long long)lost);
	}
}

/* A green process's name for its track, as the scheduler's probes first gave it. */
static void process_name(void *ctx, __u32 pid, __u64 process, char *name)
{
	struct sqflow_proc_key key = { .pid = pid, .id = process };

	if (bpf_map_lookup_elem(proc_names_fd, &key, name))
		name[0] = '\0';
}

static int merge_failed;	/* --merge could not read the browser's trace */

/* The trace's writer, on stdout, its times from base_ns. */
static int begin_trace(__u64 base_ns)
{
	/* merged, the trace keeps the clock's own times, as the browser's do */
	struct sqflow_sink sink = env.c.format == SQ_FORMAT_CHROME
					  ? sqflow_chrome_sink(stdout, env.merge ? 0 : base_ns, env.merge, &merge_failed)
					  : sqflow_perfetto_sink(stdout, base_ns);

	if (sink.ctx && !(slices = sqflow_slices_begin(sink, process_name, NULL, base_ns)))
		sink.finish(sink.ctx, 0, 0, 0);
	return slices ? 0 : -ENOMEM;
}

static __u64 round_up_pow2(__u64 v)
{
	__u64 p = (__u64)sysconf(_SC_PAGESIZE);

	while (p < v)
		p <<= 1;
	return p;
}

/* Returns first: an entry seen before its return probe is attached would never be
 * closed. */
static int attach_calls(struct sqflow_bpf *skel)
{
	/* which green process runs, first: calls are paired per process */
	int err = sq_attach(&env.c, skel->progs.process_activate, "process__activate");

	if (!err)
		err = sq_attach(&env.c, skel->progs.process_wait, "process__wait");
	if (!err)
		err = sq_attach(&env.c, skel->progs.io_wait, "io__wait");
	if (!err)
		err = sq_attach(&env.c, skel->progs.process_ready, "process__ready");
	if (!err)
		err = sq_attach(&env.c, skel->progs.method_return, "method__return");

	if (!err && !env.no_blocks)
		err = sq_attach(&env.c, skel->progs.block_return, "block__return");
	if (!err)
		err = sq_attach(&env.c, skel->progs.method_entry, "method__entry");
	if (!err && !env.no_blocks)
		err = sq_attach(&env.c, skel->progs.block_entry, "block__entry");
	/* the requests, for a trace: their records from now on (sqbatch.bpf.h) */
	if (!err && (env.c.format == SQ_FORMAT_CHROME || env.c.format == SQ_FORMAT_PERFETTO)) {
		skel->bss->sq_batch_since_ns = sq_mono_ns();
		err = sq_attach(&env.c, skel->progs.req_batch, "req__batch");
	}
	return err;
}

/* The events print as they come; every interval, a progress line (text); [count]
 * intervals end the trace, as do Ctrl-C, -d and the -p process's exit. */
static int trace(struct sqflow_bpf *skel, struct sq_loop *loop)
{
	char time[48];
	long intervals = 0;

	for (;;) {
		int wake = sq_loop_wait(loop);

		if (wake == SQ_WAKE_ERROR)
			return -EIO;
		if (wake != SQ_WAKE_TICK)
			return 0;
		if (env.c.format == SQ_FORMAT_TEXT) {
			sq_format_time(time, sizeof(time), sq_mono_ns(), false);
			printf("--- %s: %llu events, %llu lost ---\n", time, (unsigned long long)nevents,
			       (unsigned long long)skel->bss->lost);
			fflush(stdout);
		}
		if (env.c.count && ++intervals >= env.c.count)
			return 0;
	}
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqflow_bpf *skel;
	__u64 lost = 0;
	int err;

	err = sq_start(&env.c, "sqflow", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	skel = sqflow_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqflow: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	/* The kernel compares at most SQ_NAME_LEN - 1 bytes; wanted() does the rest. */
	sq_prefix_set((char *)skel->rodata->class_prefix, &skel->rodata->class_prefix_len, env.class_prefix);
	sq_prefix_set((char *)skel->rodata->sel_prefix, &skel->rodata->sel_prefix_len, env.sel_prefix);
	skel->rodata->max_depth = env.max_depth;
	bpf_map__set_max_entries(skel->maps.rb, round_up_pow2(env.buffer));
	/* the requests only for a trace: else neither their program (its verification) nor
	 * their trace contexts' preallocated map (its creation) at every start */
	if (env.c.format != SQ_FORMAT_CHROME && env.c.format != SQ_FORMAT_PERFETTO) {
		bpf_program__set_autoload(skel->progs.req_batch, false);
		bpf_map__set_max_entries(skel->maps.traces, 1);
	}
	err = sqflow_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqflow: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	names_fd = bpf_map__fd(skel->maps.names);
	proc_names_fd = bpf_map__fd(skel->maps.proc_names);
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), handle_event, NULL);
	if (err)
		goto cleanup;
	err = attach_calls(skel);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, env.no_blocks ? "method calls" : "method and block calls");
	/* A trace's times count from here: every probe is attached. */
	if (env.c.format == SQ_FORMAT_CHROME || env.c.format == SQ_FORMAT_PERFETTO) {
		err = begin_trace(sq_mono_ns());
		if (err)
			goto cleanup;
	} else if (env.c.format == SQ_FORMAT_TEXT)
		printf("%s%-7s %-7s %s\n", env.c.timestamp ? "TIME            " : "", "PID", "TID", "CALL");
	fflush(stdout);
	err = trace(skel, &loop);
	/* Whatever is still in the buffer belongs to the trace: detach, so that it ends,
	 * then read it out (in batches: see sq_rb_yield). */
	if (slices)
		sqflow_slices_stop(slices, sq_mono_ns());
	sq_detach_all();
	if (!err)
		sq_loop_drain(&loop, 0);
	lost = skel->bss->lost;
	if (slices)
		sqflow_slices_end(slices, nevents, lost);
	print_lost(lost);
	fflush(stdout);

cleanup:
	sq_detach_all();
	sq_names_free();
	sq_loop_close(&loop);
	sqflow_bpf__destroy(skel);
	return err || merge_failed ? SQ_EXIT_ERROR : 0;
}
