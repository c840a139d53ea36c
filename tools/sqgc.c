// SPDX-License-Identifier: BSD-2-Clause
/* sqgc - GC pauses of sqvm processes: log2 histograms of the pause of young (incremental)
 * and full collections, per interval, with counts, total and maximum; or (-e) one line
 * per collection with the heap sizes before and after it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqgc.h"
#include "sqgc.skel.h"
#include "sqloop.h"
#include "sqoutput.h"

#define OPT_MIN 0x2001

static struct env {
	struct sq_common c;
	bool millis;		/* -m */
	bool events;		/* -e */
	const char *min_arg;	/* -M, parsed once -m is known */
	__u64 min_ns;
} env;

static const char *const kind_names[SQGC_KINDS] = { "young", "full" };
static const char *const kind_titles[SQGC_KINDS] = { "young (incremental) collections",
						     "full collections" };

const char *argp_program_version = "sqgc (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Summarize the GC pauses of sqvm processes as histograms, or show each one.\n"
"\n"
"USAGE: sqgc [-h] [-p PID] [--vm PATH] [-m] [-e] [--min MIN] [-d DURATION]\n"
"            [-T] [-j] [-v] [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqgc -p 185            # pause histograms until Ctrl-C or the VM exits\n"
"    sqgc -p 185 -m 5       # in milliseconds, every 5 seconds\n"
"    sqgc -p 185 -e         # one line per collection, then the histograms\n"
"    sqgc -p 185 -e --min 2ms  # only collections that paused 2 ms or more\n"
"    sqgc --vm build/sqvm   # every process running build/sqvm, also new ones\n"
"    sqgc -p 185 -j 10 6    # JSON lines, every 10 seconds, for a minute\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "milliseconds", 'm', NULL, 0, "Histograms and pauses in milliseconds (default: us)", 0 },
	{ "events", 'e', NULL, 0, "Print one line per collection", 0 },
	{ "min", OPT_MIN, "MIN", 0,
	  "Ignore collections that paused less than MIN (a bare number is in us, ms with -m)", 0 },
	{ "M", 'M', "MIN", OPTION_HIDDEN, "Old spelling of --min", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'm':
		env.millis = true;
		break;
	case 'e':
		env.events = true;
		break;
	case 'M':
	case OPT_MIN:
		env.min_arg = arg;
		break;
	case ARGP_KEY_END:
		if (env.min_arg &&
		    sq_parse_duration(env.min_arg, env.millis ? 1000000 : 1000, &env.min_ns))
			argp_error(state, "invalid minimum pause '%s' (e.g. 500us, 2ms)", env.min_arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* A pause in the display unit, with three decimals. */
static double in_unit(__u64 ns)
{
	return env.millis ? ns / 1e6 : ns / 1e3;
}

static const char *unit(void)
{
	return env.millis ? "ms" : "us";
}

/* ===================================================================== */
/* Events (-e)                                                           */
/* ===================================================================== */

static bool header_printed;

static void print_event_header(void)
{
	if (env.c.format != SQ_FORMAT_TEXT || header_printed)
		return;
	printf("%-15s %-7s %-5s %6s %12s %12s %12s %12s %12s %12s\n", "TIME", "PID", "KIND", "SEQ",
	       env.millis ? "PAUSE(ms)" : "PAUSE(us)", "BEFORE(KB)", "AFTER(KB)", "SURVIVED(KB)",
	       "TENURED(KB)", "FREED(KB)");
	header_printed = true;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct sqgc_event *e = data;
	__u64 before = e->young_before + e->old_before, after = e->young_after + e->old_after;
	const char *kind = kind_names[e->kind & 1];
	char time[48];

	if (env.c.format == SQ_FORMAT_JSON)
		sq_format_iso_time(time, sizeof(time), e->begin_ns);
	else
		sq_format_time(time, sizeof(time), e->begin_ns, true);
	if (env.c.format == SQ_FORMAT_JSON) {
		printf("{\"type\":\"gc\",\"time\":\"%s\",\"begin_ns\":%llu,\"end_ns\":%llu,\"pid\":%u,"
		       "\"tid\":%u,\"kind\":\"%s\",\"seq\":%llu,\"pause_ns\":%llu,"
		       "\"young_before\":%llu,\"young_after\":%llu,\"old_before\":%llu,"
		       "\"old_after\":%llu,\"survived\":%llu,\"tenured\":%llu,\"freed\":%llu,"
		       "\"remembered\":%llu,\"begin_seen\":%s}\n",
		       time, (unsigned long long)e->begin_ns, (unsigned long long)e->end_ns, e->pid,
		       e->tid, kind, (unsigned long long)e->seq, (unsigned long long)e->pause_ns,
		       (unsigned long long)e->young_before, (unsigned long long)e->young_after,
		       (unsigned long long)e->old_before, (unsigned long long)e->old_after,
		       (unsigned long long)e->survived, (unsigned long long)e->tenured,
		       (unsigned long long)e->freed, (unsigned long long)e->remembered,
		       e->begin_seen ? "true" : "false");
		return 0;
	}
	print_event_header();
	printf("%-15s %-7u %-5s %6llu %12.3f %12llu %12llu %12llu %12llu %12llu\n", time, e->pid,
	       kind, (unsigned long long)e->seq, in_unit(e->pause_ns),
	       (unsigned long long)before / 1024, (unsigned long long)after / 1024,
	       (unsigned long long)e->survived / 1024, (unsigned long long)e->tenured / 1024,
	       (unsigned long long)e->freed / 1024);
	return sq_rb_yield();
}

/* ===================================================================== */
/* Summaries                                                             */
/* ===================================================================== */

/* Takes one kind's counters out of the shared .bss, zeroing them for the next interval. */
static void take_stats(struct sqgc_stats *shared, struct sqgc_stats *out)
{
	for (int i = 0; i < SQ_MAX_SLOTS; i++)
		out->slots[i] = sq_take(&shared->slots[i]);
	out->count = sq_take(&shared->count);
	out->total_ns = sq_take(&shared->total_ns);
	out->max_ns = sq_take(&shared->max_ns);
	out->filtered = sq_take(&shared->filtered);
}

static void print_text_summary(const struct sqgc_stats *s, __u64 lost)
{
	char min_text[32];

	sq_format_duration(min_text, sizeof(min_text), env.min_ns);
	if (env.c.interval_ns || env.c.timestamp || env.events)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	for (int k = 0; k < SQGC_KINDS; k++) {
		printf("%s: %llu", kind_titles[k], (unsigned long long)s[k].count);
		if (s[k].count)
			printf(", total %.3f %s, max %.3f %s", in_unit(s[k].total_ns), unit(),
			       in_unit(s[k].max_ns), unit());
		if (env.min_ns)
			printf(" (%llu shorter than %s not counted)",
			       (unsigned long long)s[k].filtered, min_text);
		printf("\n");
		sq_print_log2_hist(stdout, s[k].slots, SQ_MAX_SLOTS, env.millis ? "msecs" : "usecs");
		if (k + 1 < SQGC_KINDS && s[k].count)
			printf("\n");
	}
	if (lost)
		printf("Lost %llu events (ring buffer full)\n", (unsigned long long)lost);
	fflush(stdout);
}

static void print_json_summary(const struct sqgc_stats *s, __u64 lost)
{
	char time[48];

	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"type\":\"summary\",\"time\":\"%s\",\"pid\":", time);
	if (env.c.pid)
		printf("%d", env.c.pid);
	else
		printf("null");
	printf(",\"unit\":\"%s\",\"min_ns\":%llu", env.millis ? "ms" : "us",
	       (unsigned long long)env.min_ns);
	for (int k = 0; k < SQGC_KINDS; k++) {
		printf(",\"%s\":{\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,\"filtered\":%llu,"
		       "\"hist\":", kind_names[k], (unsigned long long)s[k].count,
		       (unsigned long long)s[k].total_ns, (unsigned long long)s[k].max_ns,
		       (unsigned long long)s[k].filtered);
		sq_json_log2_hist(stdout, s[k].slots, SQ_MAX_SLOTS);
		printf("}");
	}
	printf(",\"lost\":%llu}\n", (unsigned long long)lost);
	fflush(stdout);
}

static int report(void *ctx, bool last)
{
	struct sqgc_bpf *skel = ctx;
	struct sqgc_stats s[SQGC_KINDS];
	__u64 lost = sq_take(&skel->bss->lost);

	for (int k = 0; k < SQGC_KINDS; k++)
		take_stats(&skel->bss->stats[k], &s[k]);
	if (env.c.format == SQ_FORMAT_JSON)
		print_json_summary(s, lost);
	else
		print_text_summary(s, lost);
	header_printed = false;
	if (env.events && !last)	/* the next interval's events */
		print_event_header();
	return 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqgc_bpf *skel;
	int err;

	err = sq_start(&env.c, "sqgc", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	skel = sqgc_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqgc: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->millis = env.millis;
	skel->rodata->min_ns = env.min_ns;
	skel->rodata->events = env.events;
	err = sqgc_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqgc: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	if (env.events && (err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), handle_event, NULL)))
		goto cleanup;
	err = sq_attach(&env.c, skel->progs.gc_young_begin, "gc__incremental__begin") ||
	      sq_attach(&env.c, skel->progs.gc_young_end, "gc__incremental__end") ||
	      sq_attach(&env.c, skel->progs.gc_full_begin, "gc__full__begin") ||
	      sq_attach(&env.c, skel->progs.gc_full_end, "gc__full__end");
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, "GC pauses");
	if (env.events)
		print_event_header();
	fflush(stdout);
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqgc_bpf__destroy(skel);
	return err ? SQ_EXIT_ERROR : 0;
}
