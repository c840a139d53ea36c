// SPDX-License-Identifier: BSD-2-Clause
/* sqalloc - object allocations of sqvm processes by class, or by allocating method, or by
 * the innermost frames of the Smalltalk stack, counted in the kernel: from the VM's
 * batches of allocation records (squeak:alloc__batch) by default, from squeak:object__alloc
 * for --callers (which needs the stack at the instant of the event), or estimated from
 * squeak:object__alloc__sample with --sample. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqalloc.h"
#include "sqalloc.skel.h"
#include "sqattach.h"
#include "sqbpf.h"
#include "sqloop.h"
#include "sqnames.h"
#include "sqoutput.h"

#define OPT_SAMPLE 0x2001
#define OPT_CALLERS 0x2002
#define OPT_SKIP_CLASS_SIDE 0x2003
#define OPT_TOP_COUNT 0x2004
#define OPT_TOP_SIZE 0x2005

/* Extra frames walked with --skip-class-side, to leave N once the constructors are off. */
#define SKIP_SLACK 4

static struct env {
	struct sq_common c;
	bool by_method;		/* -b */
	const char *cls;	/* -C */
	bool sample;		/* --sample */
	long callers;		/* --callers N; 0: none */
	bool skip_class_side;	/* --skip-class-side */
	long top_count;		/* rows of the table by count; -1: not asked for */
	long top_size;		/* rows of the table by bytes; -1: not asked for */
} env = { .top_count = -1, .top_size = -1 };

const char *argp_program_version = "sqalloc (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Count the objects sqvm processes allocate: by class, by allocating method, or\n"
"by the innermost frames of the Smalltalk stack.\n"
"\n"
"USAGE: sqalloc [-h] [-p PID] [--vm PATH] [-C CLASS] [-b] [--callers N]\n"
"               [--skip-class-side] [--sample] [-n N] [-s count|bytes]\n"
"               [-d DURATION] [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqalloc -p 185              # by class, until Ctrl-C or the VM exits\n"
"    sqalloc -p 185 -n 10 5      # the 10 most allocated classes, every 5 s\n"
"    sqalloc -p 185 -n 10 -s bytes  # the 10 classes with the most bytes\n"
"    sqalloc -p 185 -b -C Point  # which methods created the Points?\n"
"    sqalloc -p 185 -C Point --callers 2   # ... and who called them\n"
"    sqalloc -p 185 -C Point --callers 1 --skip-class-side\n"
"                                # ... past Point class>>x:y:\n"
"    sqalloc -p 185 --sample     # estimate from sampled allocations (cheaper)\n"
"    sqalloc --vm build/sqvm     # every process of build/sqvm, new ones too\n"
"    sqalloc -p 185 -j 1         # JSON lines, one per second\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "class", 'C', "CLASS", 0, "Only allocations of CLASS (the exact name); filtered in the kernel", 0 },
	{ "by-method", 'b', NULL, 0, "Count by allocating method (Class>>selector) and class", 0 },
	{ "callers", OPT_CALLERS, "N", 0,
	  "Count by the N innermost Smalltalk frames (1 to 16) and class", 0 },
	{ "skip-class-side", OPT_SKIP_CLASS_SIDE, NULL, 0,
	  "With --callers: leave out the innermost class-side frames (constructors)", 0 },
	{ "sample", OPT_SAMPLE, NULL, 0,
	  "Estimate from object__alloc__sample (see sqvm --alloc-sample); much cheaper", 0 },
	{ "top", 'n', "N", 0, "Show the top N rows (0: all)", 0 },
	{ "sort", 's', "ORDER", 0, "Order rows by count (default) or bytes", 0 },
	/* the spellings of sqalloc 0.1, kept working */
	{ "c", 'c', "CLASS", OPTION_HIDDEN, "Old spelling of -C CLASS", 0 },
	{ "m", 'm', NULL, OPTION_HIDDEN, "Old spelling of -b", 0 },
	{ "top-count", OPT_TOP_COUNT, "N", 0, "Old spelling: a table of the top N by count (also -C N)", 0 },
	{ "top-size", OPT_TOP_SIZE, "N", 0, "Old spelling: a table of the top N by bytes (also -S N)", 0 },
	{ "S", 'S', "N", OPTION_HIDDEN, "Old spelling of --top-size", 0 },
	{},
};

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static long sort_bytes = -1;	/* -s: 1 bytes, 0 count */
static long top_n = -1;		/* -n */

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	long v;
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'b':
	case 'm':
		env.by_method = true;
		break;
	case 'C':
	case 'c':
		/* A class name never starts with a digit: -C 10 is the old --top-count. */
		if (key == 'C' && is_number(arg)) {
			if (sq_parse_long(arg, 0, 1000000, &env.top_count))
				argp_error(state, "invalid number of rows '%s'", arg);
			break;
		}
		if (!*arg || strlen(arg) >= SQALLOC_CLASS_MAX)
			argp_error(state, "invalid class name '%s' (1 to %d bytes)", arg, SQALLOC_CLASS_MAX - 1);
		env.cls = arg;
		break;
	case OPT_CALLERS:
		if (sq_parse_long(arg, 1, SQALLOC_MAX_CALLERS, &env.callers))
			argp_error(state, "invalid --callers '%s' (1 to %d frames)", arg, SQALLOC_MAX_CALLERS);
		break;
	case OPT_SKIP_CLASS_SIDE:
		env.skip_class_side = true;
		break;
	case OPT_SAMPLE:
		env.sample = true;
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &top_n))
			argp_error(state, "invalid number of rows '%s'", arg);
		break;
	case 's':
		if (strcmp(arg, "count") && strcmp(arg, "bytes") && strcmp(arg, "size"))
			argp_error(state, "invalid sort order '%s' (count or bytes)", arg);
		sort_bytes = strcmp(arg, "count") != 0;
		break;
	case OPT_TOP_COUNT:
	case OPT_TOP_SIZE:
	case 'S':
		if (sq_parse_long(arg, 0, 1000000, &v))
			argp_error(state, "invalid number of rows '%s'", arg);
		*(key == OPT_TOP_COUNT ? &env.top_count : &env.top_size) = v;
		break;
	case ARGP_KEY_END:
		if (env.skip_class_side && !env.callers)
			argp_error(state, "--skip-class-side goes with --callers N");
		if (env.callers && env.by_method)
			argp_error(state, "-b and --callers: choose one (--callers 1 is the allocating method)");
		if (top_n >= 0 || sort_bytes >= 0) {
			if (env.top_count >= 0 || env.top_size >= 0)
				argp_error(state, "-n/-s and the old --top-count/--top-size: choose one");
			*(sort_bytes == 1 ? &env.top_size : &env.top_count) = top_n >= 0 ? top_n : 0;
		}
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
	struct sqalloc_key key;
	struct sqalloc_val val;
	const char *cls;	/* the names, whole (sqnames.h) */
	char *method;		/* -b: Class>>selector; --callers: the frames joined by " <- " */
	bool complete;		/* every name whole: rows with equal names may merge */
};

/* Takes every entry out of the map (lookup-and-delete: an allocation counted while we
 * read lands in the next interval, not nowhere). */
static int take_rows(int fd, struct row **out, size_t *n)
{
	size_t nkeys, nrows = 0;
	struct sqalloc_key *keys = sq_map_keys(fd, sizeof(*keys), SQALLOC_MAX_KEYS, &nkeys);
	struct row *rows = calloc(SQALLOC_MAX_KEYS, sizeof(*rows));

	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nkeys; i++) {
		rows[nrows].key = keys[i];
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &rows[nrows].val) == 0)
			nrows++;
	}
	free(keys);
	*out = rows;
	*n = nrows;
	return 0;
}

/* The names of a row, whole (sqnames.h); "?" if nothing is known of one. */
static const char *name_at(struct sqalloc_bpf *skel, __u32 pid, __u64 addr, bool *complete)
{
	const char *name = sq_map_name(bpf_map__fd(skel->maps.names), pid, addr, complete);

	return name ? name : "?";
}

static const char *method_at(struct sqalloc_bpf *skel, __u32 pid, __u64 method, bool *complete)
{
	const char *name = sq_map_method_name(bpf_map__fd(skel->maps.names), bpf_map__fd(skel->maps.vms),
					      pid, method, complete);

	return name ? name : "?";
}

/* "Point class>>x:y:", "[] in Point class>>foo": a method of a metaclass. */
static bool class_side(const char *name)
{
	const char *arrows = strstr(name, ">>");

	return arrows && arrows - name >= 6 && strncmp(arrows - 6, " class", 6) == 0;
}

static void resolve(struct sqalloc_bpf *skel, struct row *r)
{
	bool ok, all = true;
	char *s = NULL;
	size_t len = 0;
	FILE *f;

	r->cls = name_at(skel, r->key.pid, r->key.cls, &ok);
	all &= ok;
	if (env.by_method) {
		if (!r->key.alloc_class && !r->key.alloc_sel) {
			r->method = strdup("(no method)");
		} else {
			const char *c = name_at(skel, r->key.pid, r->key.alloc_class, &ok);
			all &= ok;
			const char *sel = name_at(skel, r->key.pid, r->key.alloc_sel, &ok);
			all &= ok;
			if (asprintf(&r->method, "%s>>%s", c, sel) < 0)
				r->method = NULL;
		}
	} else if (env.callers) {
		int first = 0, shown = 0;
		f = open_memstream(&s, &len);
		if (!f)
			return;
		if (r->key.flags & SQALLOC_NO_STACK)
			fputs("(stack unknown)", f);
		if (env.skip_class_side)
			while (first + 1 < r->key.ncallers &&
			       class_side(method_at(skel, r->key.pid, r->key.callers[first], &ok)))
				first++;
		for (int i = first; i < r->key.ncallers && shown < env.callers; i++, shown++) {
			fprintf(f, "%s%s", shown ? " <- " : "", method_at(skel, r->key.pid, r->key.callers[i], &ok));
			all &= ok;
		}
		fclose(f);
		r->method = s;
	}
	r->complete = all;
}

/* What a row counts, for sorting and showing: estimates in --sample mode. */
static __u64 row_count(const struct row *r)
{
	return env.sample ? (r->val.est_count + SQALLOC_EST_SCALE / 2) / SQALLOC_EST_SCALE
			  : r->val.count;
}

static int cmp_names(const struct row *a, const struct row *b)
{
	int d = strcmp(a->method ? a->method : "", b->method ? b->method : "");
	if (!d)
		d = strcmp(a->cls, b->cls);
	return d;
}

static int by_names(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int d = cmp_names(a, b);

	/* rows whose names may be cut stay apart, by process and address */
	if (!d && !(a->complete && b->complete))
		d = memcmp(&a->key, &b->key, sizeof(a->key));
	return d;
}

/* System-wide, the same class (or method) in several processes is one row: rows merge
 * when their names are equal and whole. And --skip-class-side or a shorter chain can
 * make two keys one row too. */
static size_t merge_rows(struct row *rows, size_t n)
{
	size_t out = 0;

	qsort(rows, n, sizeof(*rows), by_names);
	for (size_t i = 0; i < n; i++) {
		if (out && rows[out - 1].complete && rows[i].complete && cmp_names(&rows[out - 1], &rows[i]) == 0) {
			rows[out - 1].val.count += rows[i].val.count;
			rows[out - 1].val.bytes += rows[i].val.bytes;
			rows[out - 1].val.est_count += rows[i].val.est_count;
			free(rows[i].method);
			continue;
		}
		rows[out++] = rows[i];
	}
	return out;
}

static int by_count(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	__u64 ca = row_count(a), cb = row_count(b);

	if (ca != cb)
		return ca < cb ? 1 : -1;
	if (a->val.bytes != b->val.bytes)
		return a->val.bytes < b->val.bytes ? 1 : -1;
	return by_names(a, b);
}

static int by_bytes(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->val.bytes != b->val.bytes)
		return a->val.bytes < b->val.bytes ? 1 : -1;
	return by_count(pa, pb);
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

static bool has_method_column(void)
{
	return env.by_method || env.callers;
}

static void print_table(const struct row *rows, size_t n, long top, bool bytes_order)
{
	size_t shown = sq_shown(n, top);
	const char *cnt = env.sample ? "~COUNT" : "COUNT", *bytes = env.sample ? "~BYTES" : "BYTES";
	/* Columns widen to the longest name shown (names are kept whole), never narrow. */
	int wm = 40, wc = has_method_column() ? 24 : 32;

	for (size_t i = 0; i < shown; i++) {
		int lm = rows[i].method ? (int)strlen(rows[i].method) : 1, lc = (int)strlen(rows[i].cls);
		wm = lm > wm ? lm : wm;
		wc = lc > wc ? lc : wc;
	}
	if (has_method_column())
		printf("%-*s %-*s %12s %14s", wm, env.callers ? "CALLERS" : "METHOD", wc, "CLASS", cnt, bytes);
	else
		printf("%-*s %12s %14s", wc, "CLASS", cnt, bytes);
	printf(env.sample ? " %9s\n" : "\n", "SAMPLES");
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		if (has_method_column())
			printf("%-*s %-*s", wm, sq_printable(r->method), wc, sq_printable(r->cls));
		else
			printf("%-*s", wc, sq_printable(r->cls));
		printf(" %12llu %14llu", (unsigned long long)row_count(r),
		       (unsigned long long)r->val.bytes);
		if (env.sample)
			printf(" %9llu", (unsigned long long)r->val.count);
		printf("\n");
	}
	if (shown < n)
		printf("... %zu more row%s (the top %zu by %s shown; -n 0 shows all)\n", n - shown,
		       n - shown == 1 ? "" : "s", shown, bytes_order ? "size" : "count");
}

static void print_text(struct row *rows, size_t n, __u64 lost)
{
	__u64 count = 0, bytes = 0, samples = 0;

	for (size_t i = 0; i < n; i++) {
		count += row_count(&rows[i]);
		bytes += rows[i].val.bytes;
		samples += rows[i].val.count;
	}
	if (env.c.interval_ns || env.c.timestamp)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	if (env.sample)
		printf("ESTIMATE from %llu sampled allocations (object__alloc__sample weights)\n",
		       (unsigned long long)samples);
	if (env.top_count < 0 && env.top_size < 0) {
		qsort(rows, n, sizeof(*rows), by_count);
		print_table(rows, n, 0, false);
	}
	if (env.top_count >= 0) {
		qsort(rows, n, sizeof(*rows), by_count);
		print_table(rows, n, env.top_count, false);
	}
	if (env.top_size >= 0) {
		if (env.top_count >= 0)
			printf("\n");
		qsort(rows, n, sizeof(*rows), by_bytes);
		print_table(rows, n, env.top_size, true);
	}
	printf("%s%llu objects, %llu bytes in %zu %s\n", env.sample ? "~" : "",
	       (unsigned long long)count, (unsigned long long)bytes, n,
	       env.by_method ? (n == 1 ? "method/class pair" : "method/class pairs")
	       : env.callers ? (n == 1 ? "caller chain/class pair" : "caller chain/class pairs")
			     : (n == 1 ? "class" : "classes"));
	if (lost)
		printf("Lost %llu allocations (the kernel map of %d entries was full)\n",
		       (unsigned long long)lost, SQALLOC_MAX_KEYS);
	fflush(stdout);
}

static void print_json(struct row *rows, size_t n, __u64 lost)
{
	char time[48];
	__u64 count = 0, bytes = 0;
	long top = env.top_size >= 0 ? env.top_size : env.top_count;
	size_t shown;

	qsort(rows, n, sizeof(*rows), env.top_size >= 0 && env.top_count < 0 ? by_bytes : by_count);
	shown = sq_shown(n, top);
	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"time\":\"%s\",\"pid\":", time);
	if (env.c.pid)
		printf("%d", env.c.pid);
	else
		printf("null");
	printf(",\"by\":\"%s\",\"estimate\":%s,\"rows\":[",
	       env.by_method ? "method" : env.callers ? "callers" : "class", env.sample ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		count += row_count(r);
		bytes += r->val.bytes;
		if (i >= shown)
			continue;
		printf("%s{", i ? "," : "");
		if (env.by_method) {
			printf("\"method\":");
			sq_json_str(stdout, r->method ? r->method : "?");
			printf(",");
		} else if (env.callers) {
			/* the chain again as an array: split at the arrows */
			printf("\"callers\":[");
			const char *p = r->method ? r->method : "";
			for (int k = 0; *p; k++) {
				const char *arrow = strstr(p, " <- ");
				size_t len = arrow ? (size_t)(arrow - p) : strlen(p);
				char *one = strndup(p, len);
				printf("%s", k ? "," : "");
				sq_json_str(stdout, one ? one : "?");
				free(one);
				p += len + (arrow ? 4 : 0);
			}
			printf("],");
		}
		printf("\"class\":");
		sq_json_str(stdout, r->cls);
		printf(",\"count\":%llu,\"bytes\":%llu", (unsigned long long)row_count(r),
		       (unsigned long long)r->val.bytes);
		if (env.sample)
			printf(",\"samples\":%llu", (unsigned long long)r->val.count);
		printf("}");
	}
	printf("],\"total\":{\"count\":%llu,\"bytes\":%llu,\"rows\":%zu},\"lost\":%llu}\n",
	       (unsigned long long)count, (unsigned long long)bytes, n, (unsigned long long)lost);
	fflush(stdout);
}

static int report(void *ctx, bool last)
{
	struct sqalloc_bpf *skel = ctx;
	struct row *rows;
	size_t n;
	__u64 lost = sq_take(&skel->bss->lost);
	int err = take_rows(bpf_map__fd(skel->maps.allocs), &rows, &n);

	if (err) {
		fprintf(stderr, "sqalloc: reading the counts: %s\n", strerror(-err));
		return err;
	}
	for (size_t i = 0; i < n; i++)
		resolve(skel, &rows[i]);
	n = merge_rows(rows, n);
	if (env.c.format == SQ_FORMAT_JSON)
		print_json(rows, n, lost);
	else
		print_text(rows, n, lost);
	for (size_t i = 0; i < n; i++)
		free(rows[i].method);
	free(rows);
	return 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sqalloc_bpf *skel = NULL;
	struct sq_loop loop = SQ_LOOP_INIT;
	char what[SQALLOC_CLASS_MAX + 128];
	int err;

	err = sq_start(&env.c, "sqalloc", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	skel = sqalloc_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqalloc: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->by_method = env.by_method;
	skel->rodata->ncallers = env.callers ? env.callers + (env.skip_class_side ? SKIP_SLACK : 0) : 0;
	if (skel->rodata->ncallers > SQALLOC_MAX_CALLERS)
		skel->rodata->ncallers = SQALLOC_MAX_CALLERS;
	if (env.cls) {
		skel->rodata->filter_class = true;
		memcpy((char *)skel->rodata->target_class, env.cls, strlen(env.cls) + 1);
	}
	if (!env.callers)
		bpf_program__set_autoload(skel->progs.vm_start, false);
	/* one program per mode: the batches, or with --callers (a stack walk at each
	 * allocation) the per-event probe, or the sampler */
	bpf_program__set_autoload(skel->progs.alloc_batch, !env.sample && !env.callers);
	bpf_program__set_autoload(skel->progs.object_alloc, !env.sample && env.callers);
	bpf_program__set_autoload(skel->progs.object_alloc_sample, env.sample);
	err = sqalloc_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqalloc: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	/* --callers: new VMs announce their offsets (attached first, so none is missed
	 * between the scan and the attach), then the running ones are read. */
	if (env.callers) {
		err = sq_attach(&env.c, skel->progs.vm_start, "vm__start");
		if (err)
			goto cleanup;
		/* the VMs running now; later ones hand their offsets over at vm__start */
		sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms),
				       "--callers cannot walk its stack");
	}
	skel->bss->sq_batch_since_ns = sq_mono_ns();
	err = env.sample ? sq_attach(&env.c, skel->progs.object_alloc_sample, "object__alloc__sample")
	      : env.callers ? sq_attach(&env.c, skel->progs.object_alloc, "object__alloc")
			    : sq_attach(&env.c, skel->progs.alloc_batch, "alloc__batch");
	if (err)
		goto cleanup;
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	snprintf(what, sizeof(what), "%s%s%s%s", env.sample ? "sampled allocations" : "allocations",
		 env.cls ? " of class " : "", env.cls ? env.cls : "",
		 env.by_method ? " by method" : env.callers ? " by caller chain" : " by class");
	sq_print_tracing(&env.c, what);
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqalloc_bpf__destroy(skel);
	sq_names_free();
	return err ? SQ_EXIT_ERROR : 0;
}
