/* sqalloc - object allocations of sqvm processes by class, or by allocating method,
 * counted in the kernel from the squeak:object__alloc probe (or estimated from
 * squeak:object__alloc__sample with --sample). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqalloc.h"
#include "sqalloc.skel.h"
#include "sqtool.h"

#define OPT_SAMPLE 0x2001

static struct env {
	struct sq_common c;
	bool by_method;		/* -m */
	const char *cls;	/* -c */
	bool sample;		/* --sample */
	long top_count;		/* -C; -1: not given */
	long top_size;		/* -S; -1: not given */
} env = { .top_count = -1, .top_size = -1 };

const char *argp_program_version = "sqalloc (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Count the objects sqvm processes allocate, by class or by allocating method.\n"
"\n"
"USAGE: sqalloc [-h] [-p PID] [--vm PATH] [-m] [-c CLASS] [--sample]\n"
"               [-C N] [-S N] [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqalloc -p 185              # by class, until Ctrl-C or the VM exits\n"
"    sqalloc -p 185 -C 10 5      # the 10 most allocated classes, every 5 s\n"
"    sqalloc -p 185 -S 10        # the 10 classes with the most bytes allocated\n"
"    sqalloc -p 185 -m -c Point  # which methods created the Points?\n"
"    sqalloc -p 185 --sample     # estimate from sampled allocations (cheaper)\n"
"    sqalloc --vm build/sqvm     # every process of build/sqvm, new ones too\n"
"    sqalloc -p 185 -j 1         # JSON lines, one per second\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "by-method", 'm', NULL, 0, "Count by allocating method (Class>>selector) and class", 0 },
	{ "class", 'c', "CLASS", 0, "Only allocations of CLASS (exact name)", 0 },
	{ "sample", OPT_SAMPLE, NULL, 0,
	  "Estimate from object__alloc__sample (see sqvm --alloc-sample); much cheaper", 0 },
	{ "top-count", 'C', "N", 0, "Show the N rows with most objects (0: all)", 0 },
	{ "top-size", 'S', "N", 0, "Show the N rows with most bytes (0: all)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	long v;
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'm':
		env.by_method = true;
		break;
	case 'c':
		if (!*arg || strlen(arg) >= SQ_NAME_LEN)
			argp_error(state, "invalid class name '%s'", arg);
		env.cls = arg;
		break;
	case OPT_SAMPLE:
		env.sample = true;
		break;
	case 'C':
	case 'S':
		if (sq_parse_long(arg, 0, 1000000, &v))
			argp_error(state, "invalid number of rows '%s'", arg);
		*(key == 'C' ? &env.top_count : &env.top_size) = v;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

struct row {
	struct sqalloc_key key;
	struct sqalloc_val val;
};

/* Takes every entry out of the map (lookup-and-delete: an allocation counted while we
 * read lands in the next interval, not nowhere). */
static int take_rows(int fd, struct row **out, size_t *n)
{
	struct sqalloc_key *keys, cur, next;
	struct row *rows;
	size_t nkeys = 0, nrows = 0;
	void *prev = NULL;

	keys = calloc(SQALLOC_MAX_KEYS, sizeof(*keys));
	rows = calloc(SQALLOC_MAX_KEYS, sizeof(*rows));
	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	while (nkeys < SQALLOC_MAX_KEYS && bpf_map_get_next_key(fd, prev, &next) == 0) {
		keys[nkeys++] = next;
		cur = next;
		prev = &cur;
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

/* What a row counts, for sorting and showing: estimates in --sample mode. */
static __u64 row_count(const struct row *r)
{
	return env.sample ? (r->val.est_count + SQALLOC_EST_SCALE / 2) / SQALLOC_EST_SCALE
			  : r->val.count;
}

static int cmp_names(const struct row *a, const struct row *b)
{
	int d = strcmp(a->key.alloc_class, b->key.alloc_class);
	if (!d)
		d = strcmp(a->key.alloc_sel, b->key.alloc_sel);
	if (!d)
		d = strcmp(a->key.cls, b->key.cls);
	return d;
}

static int by_count(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	__u64 ca = row_count(a), cb = row_count(b);

	if (ca != cb)
		return ca < cb ? 1 : -1;
	if (a->val.bytes != b->val.bytes)
		return a->val.bytes < b->val.bytes ? 1 : -1;
	return cmp_names(a, b);
}

static int by_bytes(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->val.bytes != b->val.bytes)
		return a->val.bytes < b->val.bytes ? 1 : -1;
	return by_count(pa, pb);
}

static void method_name(const struct row *r, char *buf, size_t len)
{
	if (!r->key.alloc_class[0] && !r->key.alloc_sel[0])
		snprintf(buf, len, "(no method)");
	else
		snprintf(buf, len, "%s>>%s", r->key.alloc_class, r->key.alloc_sel);
}

static void print_table(const struct row *rows, size_t n, long top, const char *order)
{
	size_t shown = top > 0 && (size_t)top < n ? (size_t)top : n;
	const char *cnt = env.sample ? "~COUNT" : "COUNT", *bytes = env.sample ? "~BYTES" : "BYTES";
	char method[2 * SQ_NAME_LEN + 4];

	if (env.by_method)
		printf("%-40s %-24s %12s %14s", "METHOD", "CLASS", cnt, bytes);
	else
		printf("%-32s %12s %14s", "CLASS", cnt, bytes);
	printf(env.sample ? " %9s\n" : "\n", "SAMPLES");
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		if (env.by_method) {
			method_name(r, method, sizeof(method));
			printf("%-40s %-24s", method, r->key.cls);
		} else {
			printf("%-32s", r->key.cls);
		}
		printf(" %12llu %14llu", (unsigned long long)row_count(r),
		       (unsigned long long)r->val.bytes);
		if (env.sample)
			printf(" %9llu", (unsigned long long)r->val.count);
		printf("\n");
	}
	if (shown < n)
		printf("... %zu more row%s (the top %zu by %s shown; -%c 0 shows all)\n", n - shown,
		       n - shown == 1 ? "" : "s", shown, order, order[0] == 'c' ? 'C' : 'S');
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
		sq_print_time_header(&env.c, stdout);
	if (env.sample)
		printf("ESTIMATE from %llu sampled allocations (object__alloc__sample weights)\n",
		       (unsigned long long)samples);
	if (env.top_count < 0 && env.top_size < 0) {
		qsort(rows, n, sizeof(*rows), by_count);
		print_table(rows, n, 0, "count");
	}
	if (env.top_count >= 0) {
		qsort(rows, n, sizeof(*rows), by_count);
		print_table(rows, n, env.top_count, "count");
	}
	if (env.top_size >= 0) {
		if (env.top_count >= 0)
			printf("\n");
		qsort(rows, n, sizeof(*rows), by_bytes);
		print_table(rows, n, env.top_size, "size");
	}
	printf("%s%llu objects, %llu bytes in %zu %s\n", env.sample ? "~" : "",
	       (unsigned long long)count, (unsigned long long)bytes, n,
	       env.by_method ? (n == 1 ? "method/class pair" : "method/class pairs")
			     : (n == 1 ? "class" : "classes"));
	if (lost)
		printf("Lost %llu allocations (the kernel map of %d entries was full)\n",
		       (unsigned long long)lost, SQALLOC_MAX_KEYS);
	fflush(stdout);
}

static void print_json(struct row *rows, size_t n, __u64 lost)
{
	char time[48], method[2 * SQ_NAME_LEN + 4];
	__u64 count = 0, bytes = 0;
	long top = env.top_size >= 0 ? env.top_size : env.top_count;
	size_t shown;

	qsort(rows, n, sizeof(*rows), env.top_size >= 0 && env.top_count < 0 ? by_bytes : by_count);
	shown = top > 0 && (size_t)top < n ? (size_t)top : n;
	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"time\":\"%s\",\"pid\":", time);
	if (env.c.pid)
		printf("%d", env.c.pid);
	else
		printf("null");
	printf(",\"by\":\"%s\",\"estimate\":%s,\"rows\":[", env.by_method ? "method" : "class",
	       env.sample ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		count += row_count(&rows[i]);
		bytes += rows[i].val.bytes;
		if (i >= shown)
			continue;
		printf("%s{", i ? "," : "");
		if (env.by_method) {
			method_name(&rows[i], method, sizeof(method));
			printf("\"method\":");
			sq_json_str(stdout, method);
			printf(",");
		}
		printf("\"class\":");
		sq_json_str(stdout, rows[i].key.cls);
		printf(",\"count\":%llu,\"bytes\":%llu", (unsigned long long)row_count(&rows[i]),
		       (unsigned long long)rows[i].val.bytes);
		if (env.sample)
			printf(",\"samples\":%llu", (unsigned long long)rows[i].val.count);
		printf("}");
	}
	printf("],\"total\":{\"count\":%llu,\"bytes\":%llu,\"rows\":%zu},\"lost\":%llu}\n",
	       (unsigned long long)count, (unsigned long long)bytes, n, (unsigned long long)lost);
	fflush(stdout);
}

static int report(struct sqalloc_bpf *skel)
{
	struct row *rows;
	size_t n;
	__u64 lost = sq_take(&skel->bss->lost);
	int err = take_rows(bpf_map__fd(skel->maps.allocs), &rows, &n);

	if (err) {
		fprintf(stderr, "sqalloc: reading the counts: %s\n", strerror(-err));
		return err;
	}
	if (env.c.format == SQ_FORMAT_JSON)
		print_json(rows, n, lost);
	else
		print_text(rows, n, lost);
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
	struct sq_loop loop = { .epfd = -1, .sigfd = -1, .timerfd = -1 };
	char what[128];
	long reports = 0;
	int err, wake;

	sq_init(&env.c, "sqalloc");
	err = argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL);
	if (err)
		return SQ_EXIT_USAGE;
	if (sq_prepare(&env.c, &open_opts))
		return SQ_EXIT_ERROR;
	skel = sqalloc_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqalloc: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	skel->rodata->by_method = env.by_method;
	if (env.cls) {
		skel->rodata->filter_class = true;
		strncpy((char *)skel->rodata->target_class, env.cls, SQ_NAME_LEN - 1);
	}
	err = sqalloc_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqalloc: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	err = env.sample ? sq_attach(&env.c, skel->progs.object_alloc_sample, "object__alloc__sample")
			 : sq_attach(&env.c, skel->progs.object_alloc, "object__alloc");
	if (err)
		goto cleanup;
	snprintf(what, sizeof(what), "%s%s%s%s", env.sample ? "sampled allocations" : "allocations",
		 env.cls ? " of class " : "", env.cls ? env.cls : "",
		 env.by_method ? " by method" : " by class");
	sq_print_tracing(&env.c, what);

	for (;;) {
		wake = sq_loop_wait(&loop);
		if (wake == SQ_WAKE_ERROR) {
			err = -EIO;
			break;
		}
		err = report(skel);
		if (err || wake != SQ_WAKE_TICK || (env.c.count && ++reports >= env.c.count))
			break;
	}

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqalloc_bpf__destroy(skel);
	return err ? SQ_EXIT_ERROR : 0;
}
