// SPDX-License-Identifier: BSD-2-Clause
/* sqio - the I/O of sqvm processes by Smalltalk method: for each method that read,
 * wrote, accepted, connected, opened or closed, and each kind of descriptor (file,
 * TCP, other): the system calls, their bytes and time, the waits for the descriptor
 * in the event loop, and the pages its reads brought in from disk. The method shown is
 * the innermost one outside the library's I/O classes (--library: the innermost).
 * Counted in the kernel, from the VM's records of its I/O calls and waits (the
 * squeak:io__batch probe) and filemap's page-cache tracepoint. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqio.h"
#include "sqio.skel.h"
#include "sqloop.h"
#include "sqnames.h"
#include "sqoutput.h"

#define OPT_LIBRARY 0x2001

static struct env {
	struct sq_common c;
	bool hist;		/* -L */
	bool library;		/* --library */
	long top;		/* -n */
} env;

const char *argp_program_version = "sqio (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Show the I/O of sqvm processes by Smalltalk method: reads, writes, accepts,\n"
"connects, opens and closes, by kind of descriptor (file, TCP, other), with their\n"
"bytes and time, the waits for sockets, and the pages read from disk.\n"
"\n"
"USAGE: sqio [-h] [-p PID] [--vm PATH] [-L] [--library] [-n N] [-d DURATION]\n"
"            [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqio -p 185               # by method, until Ctrl-C or the VM exits\n"
"    sqio -p 185 -L 5          # with latency histograms, every 5 seconds\n"
"    sqio -p 185 --library     # charged to the library's I/O methods themselves\n"
"    sqio -p 185 -j -d 10      # JSON, after 10 seconds\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "latency-histogram", 'L', NULL, 0, "A histogram of the system calls' latency per row (us)", 0 },
	{ "library", OPT_LIBRARY, NULL, 0, "Charge I/O to the innermost method, inside the library's I/O classes too", 0 },
	{ "top", 'n', "N", 0, "The N rows with the most time (default: all)", 0 },
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
	case OPT_LIBRARY:
		env.library = true;
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &env.top))
			argp_error(state, "invalid number of rows '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char *const op_names[SQIO_NOPS] = SQIO_OP_NAMES;
static const char *const kind_names[SQIO_NKINDS] = SQIO_KIND_NAMES;

/* ===================================================================== */
/* Rows                                                                  */
/* ===================================================================== */

struct row {
	pid_t pid;
	int op, kind;
	const char *method;	/* the frame shown */
	struct sqio_stats st;
};

static struct sqio_bpf *skel;

/* Is name a method of the library's I/O classes (instance or class side, or a block
 * in one)? */
static bool in_io_library(const char *name)
{
	static const char *const classes[] = { "IOHandle", "File", "Socket", "ServerSocket" };

	if (!strncmp(name, "[] in ", 6))
		name += 6;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		size_t n = strlen(classes[i]);
		if (!strncmp(name, classes[i], n) && (!strncmp(name + n, ">>", 2) || !strncmp(name + n, " class>>", 8)))
			return true;
	}
	return false;
}

/* The frame a row is shown under. */
static const char *shown_method(const struct sqio_key *k)
{
	const char *first = NULL;

	for (int i = 0; i < SQIO_FRAMES && k->frames[i]; i++) {
		const char *n = sq_map_method_name(bpf_map__fd(skel->maps.names), bpf_map__fd(skel->maps.vms), k->pid,
						   k->frames[i], NULL);
		if (!n)
			n = "?";
		if (!first)
			first = n;
		if (env.library || !in_io_library(n))
			return n;
	}
	return first ? first : "?";
}

static int by_time(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	__u64 x = a->st.total_ns + a->st.wait_ns, y = b->st.total_ns + b->st.wait_ns;

	if (x != y)
		return x < y ? 1 : -1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	int c = strcmp(a->method, b->method);
	return c ? c : a->op != b->op ? a->op - b->op : a->kind - b->kind;
}

/* The interval's rows, taken out of the kernel's map and merged by the frame shown. */
static int take_rows(struct row **out, size_t *n)
{
	int fd = bpf_map__fd(skel->maps.rows);
	size_t nkeys, nrows = 0;
	struct sqio_key *keys = sq_map_keys(fd, sizeof(*keys), SQIO_MAX_ROWS, &nkeys);
	struct row *rows = calloc(nkeys ? nkeys : 1, sizeof(*rows));

	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nkeys; i++) {
		struct sqio_stats st;
		size_t j;
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &st) &&
		    (bpf_map_lookup_elem(fd, &keys[i], &st) || bpf_map_delete_elem(fd, &keys[i])))
			continue;
		const char *m = shown_method(&keys[i]);
		for (j = 0; j < nrows; j++)
			if (rows[j].pid == (pid_t)keys[i].pid && rows[j].op == keys[i].op && rows[j].kind == keys[i].kind &&
			    !strcmp(rows[j].method, m))
				break;
		if (j == nrows) {
			rows[j].pid = keys[i].pid;
			rows[j].op = keys[i].op < SQIO_NOPS ? keys[i].op : 0;
			rows[j].kind = keys[i].kind < SQIO_NKINDS ? keys[i].kind : SQIO_OTHER;
			rows[j].method = m;
			nrows++;
		}
		sqio_merge(&rows[j].st, &st);
	}
	free(keys);
	qsort(rows, nrows, sizeof(*rows), by_time);
	*out = rows;
	*n = nrows;
	return 0;
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

static void print_text(struct row *rows, size_t n, __u64 lost)
{
	size_t shown = sq_shown(n, env.top);

	if (env.c.interval_ns || env.c.timestamp)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	printf("%-7s %-36s %-7s %-5s %8s %6s %12s %10s %9s %7s %10s %8s\n", "PID", "METHOD", "OP", "KIND", "CALLS",
	       "ERRORS", "BYTES", "TOTAL_ms", "MAX_us", "WAITS", "WAIT_ms", "DISK_KB");
	for (size_t i = 0; i < shown; i++) {
		const struct sqio_stats *s = &rows[i].st;
		printf("%-7d %-36.36s %-7s %-5s %8llu %6llu %12llu %10.3f %9.1f %7llu %10.3f %8llu\n", rows[i].pid,
		       sq_printable(rows[i].method), op_names[rows[i].op], kind_names[rows[i].kind], (unsigned long long)s->calls,
		       (unsigned long long)s->errors, (unsigned long long)s->bytes, s->total_ns / 1e6, s->max_ns / 1e3,
		       (unsigned long long)s->waits, s->wait_ns / 1e6, (unsigned long long)s->disk_pages * 4);
	}
	if (shown < n)
		printf("... %zu more row%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	if (env.hist)
		for (size_t i = 0; i < shown; i++) {
			printf("\n%s %s (%s) of PID %d, system-call latency\n", sq_printable(rows[i].method), op_names[rows[i].op],
			       kind_names[rows[i].kind], rows[i].pid);
			sq_print_log2_hist(stdout, rows[i].st.slots, SQ_MAX_SLOTS, "usecs");
		}
	if (lost)
		printf("Lost %llu calls or batches of them (a kernel map was full, or a batch unreadable)\n",
		       (unsigned long long)lost);
}

static void print_json(struct row *rows, size_t n, __u64 lost)
{
	size_t shown = sq_shown(n, env.top);
	char time[48];

	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"type\":\"io\",\"time\":\"%s\",\"rows\":[", time);
	for (size_t i = 0; i < shown; i++) {
		const struct sqio_stats *s = &rows[i].st;
		printf("%s{\"pid\":%d,\"method\":", i ? "," : "", rows[i].pid);
		sq_json_str(stdout, rows[i].method);
		printf(",\"op\":\"%s\",\"kind\":\"%s\",\"calls\":%llu,\"errors\":%llu,\"bytes\":%llu,\"total_ns\":%llu,"
		       "\"max_ns\":%llu,\"waits\":%llu,\"wait_ns\":%llu,\"wait_max_ns\":%llu,\"disk_bytes\":%llu,\"hist\":",
		       op_names[rows[i].op], kind_names[rows[i].kind], (unsigned long long)s->calls,
		       (unsigned long long)s->errors, (unsigned long long)s->bytes, (unsigned long long)s->total_ns,
		       (unsigned long long)s->max_ns, (unsigned long long)s->waits, (unsigned long long)s->wait_ns,
		       (unsigned long long)s->wait_max_ns, (unsigned long long)s->disk_pages * 4096);
		sq_json_log2_hist(stdout, s->slots, SQ_MAX_SLOTS);
		printf("}");
	}
	printf("],\"lost\":%llu}\n", (unsigned long long)lost);
}

static int report(void *ctx, bool last)
{
	__u64 lost = sq_take(&skel->bss->lost) + sq_take(&skel->bss->sq_batch_lost);
	struct row *rows;
	size_t n;
	int err = take_rows(&rows, &n);

	if (err) {
		fprintf(stderr, "sqio: reading the counts: %s\n", strerror(-err));
		return err;
	}
	if (env.c.format == SQ_FORMAT_JSON)
		print_json(rows, n, lost);
	else
		print_text(rows, n, lost);
	fflush(stdout);
	free(rows);
	return 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

static int attach_all(void)
{
	struct bpf_link *l;
	int err = sq_attach(&env.c, skel->progs.vm_start, "vm__start");

	if (!err)
		sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms), "reading its stack");
	if (err)
		return err;
	/* The page-cache tracepoint (one link, for every process: the program filters);
	 * its link lives until sqio__destroy. */
	l = bpf_program__attach(skel->progs.page_added);
	if (!l) {
		int e = errno;

		/* libbpf finds a tracepoint's id through tracefs, which a fresh boot may lack */
		if (e == ENOENT && access("/sys/kernel/tracing/events", F_OK) && access("/sys/kernel/debug/tracing/events", F_OK))
			sq_error("cannot attach to the filemap:mm_filemap_add_to_page_cache tracepoint: tracefs is not "
				 "mounted (mount -t tracefs nodev /sys/kernel/tracing)");
		else
			sq_error("cannot attach %s: %s", bpf_program__name(skel->progs.page_added), strerror(e));
		return -e;
	}
	skel->links.page_added = l;
	/* last: the records from now on are this tool's (bpf/sqbatch.bpf.h) */
	skel->bss->sq_batch_since_ns = sq_mono_ns();
	return sq_attach(&env.c, skel->progs.io_batch, "io__batch");
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	int err;

	err = sq_start(&env.c, "sqio", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	skel = sqio_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqio: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->only_pid = env.c.pid;
	err = sqio_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqio: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (!err)
		err = attach_all();
	if (!err)
		err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, "I/O by method");
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqio_bpf__destroy(skel);
	sq_names_free();
	return err ? SQ_EXIT_ERROR : 0;
}
