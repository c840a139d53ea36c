// SPDX-License-Identifier: BSD-2-Clause
/* sqcalls - per method of sqvm processes: how often it is called, and how long it takes,
 * inclusive (callees included) and exclusive (self), counted in the kernel from the call
 * probes, like bcc's ucalls; -L adds a latency histogram per method, -S the system calls
 * each method made. How recursion, non-local returns and green processes are timed:
 * bpf/sqcalls.bpf.c and the man page. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqcalls.h"
#include "sqcalls.skel.h"
#include "sqloop.h"
#include "sqmse.h"
#include "sqnames.h"
#include "sqoutput.h"

#define OPT_NO_BLOCKS 0x2001
#define OPT_MSE 0x2002

enum order { BY_TOTAL, BY_SELF, BY_COUNT };

static struct env {
	struct sq_common c;
	const char *class_prefix;	/* -C */
	const char *sel_prefix;		/* -M */
	bool hist;			/* -L */
	bool syscalls;			/* -S */
	bool millis;			/* -m */
	bool no_blocks;			/* --no-blocks */
	long top;			/* -n */
	enum order order;		/* -s */
	const char *mse;		/* --mse FILE */
} env = { .top = 20 };

const char *argp_program_version = "sqcalls (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Count the method calls of sqvm processes, with their inclusive and self time.\n"
"\n"
"USAGE: sqcalls [-h] [-p PID] [--vm PATH] [-C CLASS] [-M SELECTOR] [-L] [-S]\n"
"               [-m] [-n N] [-s total|self|count] [--no-blocks] [-d DURATION]\n"
"               [--mse FILE] [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqcalls -p 185            # the 20 methods with most total time, at Ctrl-C\n"
"    sqcalls -p 185 -s self    # ... most time in themselves\n"
"    sqcalls -p 185 -L -m      # with a latency histogram each, in milliseconds\n"
"    sqcalls -p 185 -S         # and the system calls each made\n"
"    sqcalls -p 185 -C Json -n 0 5   # methods of classes Json..., every 5 s\n"
"    sqcalls -p 185 -d 10 -j   # ten seconds, as JSON\n"
"    sqcalls -p 185 --mse calls.mse   # and the calls between methods, for Moose\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "class", 'C', "CLASS", 0, "Only methods whose defining or receiver class begins with CLASS", 0 },
	{ "selector", 'M', "SELECTOR", 0, "Only methods whose selector begins with SELECTOR", 0 },
	{ "latency", 'L', NULL, 0, "A log2 histogram of each method's inclusive times", 0 },
	{ "syscalls", 'S', NULL, 0, "Count and time the system calls each method made", 0 },
	{ "milliseconds", 'm', NULL, 0, "Times in milliseconds (default: microseconds)", 0 },
	{ "top", 'n', "N", 0, "The top N methods (default 20; 0: all)", 0 },
	{ "sort", 's', "ORDER", 0, "total (inclusive time, default), self, or count", 0 },
	{ "no-blocks", OPT_NO_BLOCKS, NULL, 0, "Methods only: do not count block activations", 0 },
	{ "mse", OPT_MSE, "FILE", 0,
	  "At the end, write the classes, methods and calls between them (with their counts) to FILE as a "
	  "FAMIX model in MSE, for Moose", 0 },
	{},
};

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
	case 'L':
		env.hist = true;
		break;
	case 'S':
		env.syscalls = true;
		break;
	case 'm':
		env.millis = true;
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &env.top))
			argp_error(state, "invalid number of methods '%s'", arg);
		break;
	case 's':
		if (!strcmp(arg, "total"))
			env.order = BY_TOTAL;
		else if (!strcmp(arg, "self"))
			env.order = BY_SELF;
		else if (!strcmp(arg, "count"))
			env.order = BY_COUNT;
		else
			argp_error(state, "invalid sort order '%s' (total, self or count)", arg);
		break;
	case OPT_NO_BLOCKS:
		env.no_blocks = true;
		break;
	case OPT_MSE:
		env.mse = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ===================================================================== */
/* Rows                                                                  */
/* ===================================================================== */

struct row {
	struct sqcalls_key key;
	struct sqcalls_stats st;
	struct sqcalls_sys sys;
	char *name;
	bool complete;
};

/* A name of a row, whole (sqnames.h); "?" if nothing is known of it. */
static const char *name_at(struct sqcalls_bpf *skel, __u32 pid, __u64 addr, bool *complete)
{
	const char *name = sq_map_name(bpf_map__fd(skel->maps.names), pid, addr, complete);

	return name ? name : "?";
}

static int take_rows(struct sqcalls_bpf *skel, struct row **out, size_t *n)
{
	int fd = bpf_map__fd(skel->maps.stats), sfd = bpf_map__fd(skel->maps.sys);
	size_t nkeys, nrows = 0;
	struct sqcalls_key *keys = sq_map_keys(fd, sizeof(*keys), SQCALLS_MAX_METHODS, &nkeys);
	struct row *rows = calloc(SQCALLS_MAX_METHODS, sizeof(*rows));

	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nkeys; i++) {
		struct row *r = &rows[nrows];
		bool a, b;
		r->key = keys[i];
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &r->st))
			continue;
		bpf_map_lookup_and_delete_elem(sfd, &keys[i], &r->sys);
		const char *def = name_at(skel, r->key.pid, r->key.def_class, &a);
		const char *sel = name_at(skel, r->key.pid, r->key.selector, &b);
		if (asprintf(&r->name, "%s%s>>%s", r->key.block ? "[] in " : "", def, sel) < 0)
			continue;
		r->complete = a && b;
		/* -C/-M longer than the kernel compared: the rest here (a row has the defining
		 * class only: a shorter -C the kernel matched against the receiver too) */
		if (!sq_has_name_prefix(sel, env.sel_prefix) ||
		    (env.class_prefix && strlen(env.class_prefix) >= SQ_NAME_LEN &&
		     !sq_has_name_prefix(def, env.class_prefix))) {
			free(r->name);
			continue;
		}
		nrows++;
	}
	free(keys);
	*out = rows;
	*n = nrows;
	return 0;
}

static int by_name(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int d = strcmp(a->name, b->name);

	return d ? d : memcmp(&a->key, &b->key, sizeof(a->key));
}

/* System-wide, one method in several VMs is one row (when its name is whole). */
static size_t merge(struct row *rows, size_t n)
{
	size_t out = 0;

	qsort(rows, n, sizeof(*rows), by_name);
	for (size_t i = 0; i < n; i++) {
		struct row *p = out ? &rows[out - 1] : NULL;
		if (p && p->complete && rows[i].complete && !strcmp(p->name, rows[i].name)) {
			p->st.count += rows[i].st.count;
			p->st.total_ns += rows[i].st.total_ns;
			p->st.self_ns += rows[i].st.self_ns;
			p->st.entered_before += rows[i].st.entered_before;
			for (int k = 0; k < SQ_MAX_SLOTS; k++)
				p->st.slots[k] += rows[i].st.slots[k];
			p->sys.count += rows[i].sys.count;
			p->sys.total_ns += rows[i].sys.total_ns;
			free(rows[i].name);
			continue;
		}
		rows[out++] = rows[i];
	}
	return out;
}

static int by_order(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	__u64 x = env.order == BY_COUNT ? a->st.count : env.order == BY_SELF ? a->st.self_ns : a->st.total_ns;
	__u64 y = env.order == BY_COUNT ? b->st.count : env.order == BY_SELF ? b->st.self_ns : b->st.total_ns;

	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int by_syscalls(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->sys.total_ns != b->sys.total_ns)
		return a->sys.total_ns < b->sys.total_ns ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

static double in_unit(__u64 ns)
{
	return env.millis ? ns / 1e6 : ns / 1e3;
}

static void print_text(struct row *rows, size_t n, __u64 lost, __u64 deep)
{
	const char *u = env.millis ? "ms" : "us";
	size_t shown = sq_shown(n, env.top);
	__u64 calls = 0;
	char h[4][24];

	for (size_t i = 0; i < n; i++)
		calls += rows[i].st.count;
	if (env.c.interval_ns || env.c.timestamp)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	qsort(rows, n, sizeof(*rows), by_order);
	snprintf(h[0], sizeof(h[0]), "TOTAL_%s", u);
	snprintf(h[1], sizeof(h[1]), "SELF_%s", u);
	snprintf(h[2], sizeof(h[2]), "AVG_%s", u);
	printf("%-48s %10s %14s %14s %12s\n", "METHOD", "CALLS", h[0], h[1], h[2]);
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		__u64 timed = r->st.count - r->st.entered_before;
		printf("%-48s %10llu %14.3f %14.3f %12.3f\n", sq_printable(r->name), (unsigned long long)r->st.count,
		       in_unit(r->st.total_ns), in_unit(r->st.self_ns),
		       timed ? in_unit(r->st.total_ns) / timed : 0.0);
	}
	if (shown < n)
		printf("... %zu more method%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	printf("%llu calls of %zu method%s\n", (unsigned long long)calls, n, n == 1 ? "" : "s");
	if (env.hist) {
		for (size_t i = 0; i < shown; i++) {
			printf("\n%s\n", sq_printable(rows[i].name));
			sq_print_log2_hist(stdout, rows[i].st.slots, SQ_MAX_SLOTS, env.millis ? "msecs" : "usecs");
		}
	}
	if (env.syscalls) {
		size_t with = 0;
		qsort(rows, n, sizeof(*rows), by_syscalls);
		while (with < n && rows[with].sys.count)
			with++;
		printf("\nSYSCALLS by the method that made them\n%-48s %10s %14s\n", "METHOD", "SYSCALLS", h[0]);
		for (size_t i = 0; i < with && (env.top <= 0 || (long)i < env.top); i++)
			printf("%-48s %10llu %14.3f\n", rows[i].name, (unsigned long long)rows[i].sys.count,
			       in_unit(rows[i].sys.total_ns));
		if (!with)
			printf("(none: no traced method made a system call)\n");
	}
	if (lost)
		printf("Lost %llu calls (the kernel map of %d methods was full)\n", (unsigned long long)lost,
		       SQCALLS_MAX_METHODS);
	if (deep)
		printf("Not timed: %llu calls deeper than %d activations (counted)\n", (unsigned long long)deep,
		       SQCALLS_SHADOW_DEPTH);
	fflush(stdout);
}

static void print_json(struct row *rows, size_t n, __u64 lost, __u64 deep)
{
	size_t shown = sq_shown(n, env.top);
	char time[48];

	qsort(rows, n, sizeof(*rows), by_order);
	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"time\":\"%s\",\"pid\":", time);
	if (env.c.pid)
		printf("%d", env.c.pid);
	else
		printf("null");
	printf(",\"rows\":[");
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		printf("%s{\"name\":", i ? "," : "");
		sq_json_str(stdout, r->name);
		printf(",\"count\":%llu,\"total_ns\":%llu,\"self_ns\":%llu,\"entered_before_trace\":%llu",
		       (unsigned long long)r->st.count, (unsigned long long)r->st.total_ns,
		       (unsigned long long)r->st.self_ns, (unsigned long long)r->st.entered_before);
		if (env.hist) {
			printf(",\"unit\":\"%s\",\"hist\":", env.millis ? "ms" : "us");
			sq_json_log2_hist(stdout, r->st.slots, SQ_MAX_SLOTS);
		}
		if (env.syscalls)
			printf(",\"syscalls\":{\"count\":%llu,\"total_ns\":%llu}", (unsigned long long)r->sys.count,
			       (unsigned long long)r->sys.total_ns);
		printf("}");
	}
	printf("],\"methods\":%zu,\"lost\":%llu,\"deep\":%llu}\n", n, (unsigned long long)lost,
	       (unsigned long long)deep);
	fflush(stdout);
}

/* ===================================================================== */
/* --mse                                                                 */
/* ===================================================================== */

static FILE *mse_file;		/* opened before tracing: a path that cannot be written fails at once */
static struct sqmse *mse;

/* The calls between methods since the last report into the model (taken out of the map). */
static int take_edges(struct sqcalls_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.edges), names = bpf_map__fd(skel->maps.names), vms = bpf_map__fd(skel->maps.vms);
	size_t n;
	struct sqcalls_edge_key *keys = sq_map_keys(fd, sizeof(*keys), SQCALLS_MAX_EDGES, &n);
	int err = keys ? 0 : -ENOMEM;

	for (size_t i = 0; keys && i < n && !err; i++) {
		const char *caller, *callee;
		char *copy;
		__u64 calls;
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &calls))
			continue;
		caller = sq_map_method_name(names, vms, keys[i].pid, keys[i].caller, NULL);
		if (!caller || !(copy = strdup(caller)))	/* the next name may reuse its buffer */
			continue;
		callee = sq_map_method_name(names, vms, keys[i].pid, keys[i].callee, NULL);
		if (callee)
			err = sqmse_invocation(mse, copy, callee, calls);
		free(copy);
		if (err == -EINVAL)	/* a name that is not a method's: not for the model */
			err = 0;
	}
	free(keys);
	return err;
}

/* The rows into the model; at the end, the model into the file. */
static int add_to_mse(struct sqcalls_bpf *skel, const struct row *rows, size_t n, bool last)
{
	char title[160];
	int err = take_edges(skel);

	for (size_t i = 0; i < n && !err; i++)
		if ((err = sqmse_method(mse, rows[i].name, rows[i].st.count, rows[i].st.total_ns, rows[i].st.self_ns)) == -EINVAL)
			err = 0;
	if (err || !last)
		return err;
	if (env.c.pid)
		snprintf(title, sizeof(title), "sqcalls --mse, PID %d: a FAMIX 3 model of the calls traced", env.c.pid);
	else
		snprintf(title, sizeof(title), "sqcalls --mse, every VM: a FAMIX 3 model of the calls traced");
	err = sqmse_write(mse, mse_file, title);
	if (fclose(mse_file) != 0 && !err)
		err = -errno;
	mse_file = NULL;
	if (err)
		fprintf(stderr, "sqcalls: writing %s: %s\n", env.mse, strerror(-err));
	return err;
}

static int report(void *ctx, bool last)
{
	struct sqcalls_bpf *skel = ctx;
	__u64 lost = sq_take(&skel->bss->lost), deep = sq_take(&skel->bss->deep);
	struct row *rows;
	size_t n;
	int err = take_rows(skel, &rows, &n);

	if (err) {
		fprintf(stderr, "sqcalls: reading the counts: %s\n", strerror(-err));
		return err;
	}
	n = merge(rows, n);
	if (env.c.format == SQ_FORMAT_JSON)
		print_json(rows, n, lost, deep);
	else
		print_text(rows, n, lost, deep);
	if (mse) {
		__u64 lost_edges = sq_take(&skel->bss->lost_edges);
		if (lost_edges)
			fprintf(stderr, "sqcalls: lost %llu calls between methods (--mse: the kernel map of %d was full)\n",
				(unsigned long long)lost_edges, SQCALLS_MAX_EDGES);
		err = add_to_mse(skel, rows, n, last);
	}
	for (size_t i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
	return err;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

/* New VMs announce their offsets; then the running ones are read; then the batches
 * (one probe: entries, returns and process switches in order), or with -S returns before
 * entries (an entry whose return cannot be seen would never end) and -S's tracepoints. */
static int attach(struct sqcalls_bpf *skel)
{
	int err = sq_attach(&env.c, skel->progs.vm_start, "vm__start");

	if (!err)
		sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms), NULL);
	if (!err && !env.syscalls) {
		skel->bss->sq_batch_since_ns = sq_mono_ns();
		return sq_attach(&env.c, skel->progs.call_batch, "call__batch");
	}
	if (!err)
		err = sq_attach(&env.c, skel->progs.process_activate, "process__activate");
	if (!err)
		err = sq_attach(&env.c, skel->progs.method_return, "method__return");
	if (!err && !env.no_blocks)
		err = sq_attach(&env.c, skel->progs.block_return, "block__return");
	if (!err)
		err = sq_attach(&env.c, skel->progs.method_entry, "method__entry");
	if (!err && !env.no_blocks)
		err = sq_attach(&env.c, skel->progs.block_entry, "block__entry");
	if (!err && env.syscalls) {
		skel->links.sys_enter = bpf_program__attach(skel->progs.sys_enter);
		skel->links.sys_exit = bpf_program__attach(skel->progs.sys_exit);
		if (!skel->links.sys_enter || !skel->links.sys_exit) {
			err = -errno;
			fprintf(stderr, "sqcalls: cannot attach to the raw_syscalls tracepoints: %s\n", strerror(errno));
		}
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqcalls_bpf *skel = NULL;
	int err;

	err = sq_start(&env.c, "sqcalls", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	if (env.mse && (!(mse_file = fopen(env.mse, "w")) || !(mse = sqmse_new()))) {
		fprintf(stderr, "sqcalls: cannot write %s: %s\n", env.mse, strerror(errno));
		return SQ_EXIT_ERROR;
	}
	skel = sqcalls_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqcalls: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->histograms = env.hist;
	skel->rodata->millis = env.millis;
	skel->rodata->syscalls = env.syscalls;
	skel->rodata->only_pid = env.c.pid;
	skel->rodata->edges_on = env.mse != NULL;
	if (!env.mse)
		bpf_map__set_max_entries(skel->maps.edges, 1);
	sq_prefix_set((char *)skel->rodata->class_prefix, &skel->rodata->class_prefix_len, env.class_prefix);
	sq_prefix_set((char *)skel->rodata->sel_prefix, &skel->rodata->sel_prefix_len, env.sel_prefix);
	skel->rodata->no_blocks = env.no_blocks;
	/* -S charges a system call to the activation open at that instant: the per-event
	 * probes; otherwise call__batch's records */
	bpf_program__set_autoload(skel->progs.call_batch, !env.syscalls);
	bpf_program__set_autoload(skel->progs.method_entry, env.syscalls);
	bpf_program__set_autoload(skel->progs.method_return, env.syscalls);
	bpf_program__set_autoload(skel->progs.block_entry, env.syscalls);
	bpf_program__set_autoload(skel->progs.block_return, env.syscalls);
	bpf_program__set_autoload(skel->progs.process_activate, env.syscalls);
	if (!env.syscalls) {
		bpf_program__set_autoload(skel->progs.sys_enter, false);
		bpf_program__set_autoload(skel->progs.sys_exit, false);
	}
	/* The maps an option alone uses at one entry without it: a preallocated map costs its
	 * creation at every start (tests/bench/attach.sh) */
	if (!env.syscalls) {
		bpf_map__set_max_entries(skel->maps.sys, 1);
		bpf_map__set_max_entries(skel->maps.sys_start, 1);
	}
	if (!env.class_prefix && !env.sel_prefix)
		bpf_map__set_max_entries(skel->maps.passes, 1);
	err = sqcalls_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqcalls: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	err = attach(skel);
	if (err)
		goto cleanup;
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, env.no_blocks ? "method calls" : "method and block calls");
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqcalls_bpf__destroy(skel);
	sq_names_free();
	sqmse_free(mse);
	if (mse_file)
		fclose(mse_file);
	return err ? SQ_EXIT_ERROR : 0;
}
