// SPDX-License-Identifier: BSD-2-Clause
/* sqsched - the green-process scheduling of sqvm processes: per process, how often it
 * ran, for how long, how long it waited in the run queue once ready (a histogram, like
 * runqlat for threads), how long it was blocked on Semaphores, on Delays and on I/O,
 * how long collections paused it, its longest run and how late its Delays let it run
 * again; per Semaphore, its waits, who waited on it most and who signalled them
 * (tools/sqsched_sems.c); -e prints one line per switch. Counted in the kernel from the
 * process probes. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqloop.h"
#include "sqoutput.h"
#include "sqsched.h"
#include "sqsched_sems.h"
#include "sqsched.skel.h"

enum order { BY_CPU, BY_ACTIVATIONS, BY_RUNQ, BY_WAIT, BY_ID };

static struct env {
	struct sq_common c;
	bool millis;		/* -m */
	bool events;		/* -e */
	bool per_process;	/* -P */
	long top;		/* -n */
	bool top_set;
	enum order order;	/* -s */
} env;

const char *argp_program_version = "sqsched (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Show how the green processes of sqvm processes are scheduled: activations, CPU\n"
"time, run-queue latency, time blocked on Semaphores, Delays and I/O, GC pauses,\n"
"the longest run and Delay overshoot; and the Semaphores waited on, with who waited\n"
"and who signalled.\n"
"\n"
"USAGE: sqsched [-h] [-p PID] [--vm PATH] [-e] [-P] [-m] [-n N]\n"
"               [-s cpu|activations|runq|wait|id] [-d DURATION] [-T] [-j] [-v]\n"
"               [interval [count]]\n"
"\n"
"EXAMPLES:\n"
"    sqsched -p 185            # per process, until Ctrl-C or the VM exits\n"
"    sqsched -p 185 -P         # with a run-queue latency histogram per process\n"
"    sqsched -p 185 -e         # one line per process switch, then the table\n"
"    sqsched -p 185 -s runq 5  # longest waits to run first, every 5 seconds\n"
"    sqsched --vm build/sqvm -j # every process of build/sqvm, as JSON\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "events", 'e', NULL, 0, "Print one line per process switch", 0 },
	{ "per-process", 'P', NULL, 0, "A run-queue latency histogram per process (default: one for all), and the longest run and Delay overshoot columns", 0 },
	{ "milliseconds", 'm', NULL, 0, "Histograms and times in milliseconds (default: us)", 0 },
	{ "top", 'n', "N", 0, "The top N processes and Semaphores (default: all processes, 16 Semaphores)", 0 },
	{ "sort", 's', "ORDER", 0, "cpu (default), activations, runq, wait or id", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);
	static const char *const orders[] = { "cpu", "activations", "runq", "wait", "id" };

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case 'e':
		env.events = true;
		break;
	case 'P':
		env.per_process = true;
		break;
	case 'm':
		env.millis = true;
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &env.top))
			argp_error(state, "invalid number of processes '%s'", arg);
		env.top_set = true;
		break;
	case 's':
		env.order = (enum order)-1;
		for (int i = 0; i < 5; i++)
			if (!strcmp(arg, orders[i]))
				env.order = (enum order)i;
		if ((int)env.order < 0)
			argp_error(state, "invalid sort order '%s' (cpu, activations, runq, wait or id)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ===================================================================== */
/* Output                                                                */
/* ===================================================================== */

struct row {
	struct sqsched_key key;
	struct sqsched_stats st;
	bool active;		/* it did something in the interval (else it only names a process) */
};

/* An interval's rows: the active ones first (the table), then the others. */
struct rows {
	struct row *r;
	size_t n, all;
};

/* Processes a Semaphore's table names: any live one the stats tables hold. */
static const char *process_name(void *ctx, __u32 pid, __u64 id)
{
	const struct rows *rows = ctx;

	for (size_t i = 0; i < rows->all; i++)
		if (rows->r[i].key.pid == pid && rows->r[i].key.id == id)
			return rows->r[i].st.name[0] ? rows->r[i].st.name : NULL;
	return NULL;
}

static int by_order(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	__u64 x = 0, y = 0;

	switch (env.order) {
	case BY_CPU: x = a->st.cpu_ns, y = b->st.cpu_ns; break;
	case BY_ACTIVATIONS: x = a->st.activations, y = b->st.activations; break;
	case BY_RUNQ: x = a->st.runq_ns, y = b->st.runq_ns; break;
	case BY_WAIT: x = a->st.sem_wait_ns + a->st.delay_wait_ns + a->st.io_wait_ns;
		y = b->st.sem_wait_ns + b->st.delay_wait_ns + b->st.io_wait_ns; break;
	case BY_ID: break;
	}
	if (x != y)
		return x < y ? 1 : -1;
	if (a->key.pid != b->key.pid)
		return a->key.pid < b->key.pid ? -1 : 1;
	return a->key.id < b->key.id ? -1 : a->key.id > b->key.id;
}

/* An interval's figures of one process: taken out, except that a live process's name
 * must stay. Answers whether it did anything. */
static bool take_stats(struct sqsched_stats *st, struct sqsched_stats *kept)
{
	memset(kept, 0, sizeof(*kept));
	memcpy(kept->name, st->name, sizeof(kept->name));
	return st->activations || st->sem_waits || st->delay_waits || st->io_waits || st->cpu_ns;
}

/* The processes of the slot table's array (bpf/sqslots.bpf.h): read in one batch. At
 * most SQSCHED_MAX_PROCS active ones, and rows for room for twice that. */
static size_t take_slots(int fd, struct row *rows, size_t nrows, size_t *nactive)
{
	static struct sqsched_slot slots[SQSCHED_SLOTS];
	static __u32 keys[SQSCHED_SLOTS];
	__u32 count = SQSCHED_SLOTS, out = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int err = bpf_map_lookup_batch(fd, NULL, &out, keys, slots, &count, &opts);

	if (err && errno != ENOENT)
		return nrows;
	for (__u32 i = 0; i < count && *nactive < SQSCHED_MAX_PROCS; i++) {
		struct sqsched_slot *sl = &slots[i], next = { 0 };
		bool active;

		if (sl->used != 1)
			continue;
		active = take_stats(&sl->st, &next.st);
		if (sl->st.exited) {
			memset(&next, 0, sizeof(next));	/* the slot is free for the next process */
		} else {
			next.used = 1;
			next.id = sl->id;
			next.pid = sl->pid;
		}
		bpf_map_update_elem(fd, &keys[i], &next, BPF_EXIST);
		rows[nrows].key.pid = sl->pid;
		rows[nrows].key.id = sl->id;
		rows[nrows].st = sl->st;
		rows[nrows].active = active;
		nrows++;
		*nactive += active;
	}
	return nrows;
}

/* A run of process (pid, id) in progress now, in state g, counts in its row's longest
 * run so far, if the interval shows it: a process that never yields has no run that
 * ended. Not once its VM is gone (its last process stays running in the table). */
static void run_in_progress(struct rows *rows, __u32 pid, __u64 id, const struct sq_green *g, __u64 now)
{
	if ((g->state != SQ_GREEN_RUNNING && g->state != SQ_GREEN_GC) || !g->run_ns || g->run_ns > now ||
	    (kill((pid_t)pid, 0) && errno == ESRCH))
		return;
	for (size_t i = 0; i < rows->n; i++) {
		struct sqsched_stats *s = &rows->r[i].st;

		if (rows->r[i].key.pid == pid && rows->r[i].key.id == id) {
			if (now - g->run_ns > s->max_run_ns)
				s->max_run_ns = now - g->run_ns;
			return;
		}
	}
}

/* The runs in progress: the process states of bpf/sqgreen.bpf.h's table (its array in one
 * batch, then its spill). */
static void runs_in_progress(struct sqsched_bpf *skel, struct rows *rows)
{
	static struct sqsched_green_slot slots[SQ_GREEN_SLOTS];
	static __u32 keys[SQ_GREEN_SLOTS];
	__u32 count = SQ_GREEN_SLOTS, out = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int fd = bpf_map__fd(skel->maps.green_spill), err;
	__u64 now = sq_mono_ns();
	struct sqsched_key *spilled;
	struct sq_green g;
	size_t n;

	err = bpf_map_lookup_batch(bpf_map__fd(skel->maps.green_slots), NULL, &out, keys, slots, &count, &opts);
	if (err && errno != ENOENT)
		return;
	for (__u32 i = 0; i < count; i++)
		if (slots[i].used == 1)
			run_in_progress(rows, slots[i].pid, slots[i].id, &slots[i].v, now);
	if (!skel->bss->green_spilled || !(spilled = sq_map_keys(fd, sizeof(*spilled), SQ_GREEN_MAX_PROCS, &n)))
		return;
	for (size_t i = 0; i < n; i++)
		if (!bpf_map_lookup_elem(fd, &spilled[i], &g))
			run_in_progress(rows, spilled[i].pid, spilled[i].id, &g, now);
	free(spilled);
}

static int take_rows(struct sqsched_bpf *skel, struct rows *out)
{
	int fd = bpf_map__fd(skel->maps.stats_spill);
	size_t nkeys, nrows = 0, nactive = 0, k = 0;
	struct sqsched_key *keys = sq_map_keys(fd, sizeof(*keys), SQSCHED_MAX_PROCS, &nkeys);
	struct row *rows = calloc(SQSCHED_SLOTS + SQSCHED_MAX_PROCS, sizeof(*rows));

	if (!keys || !rows) {
		free(keys);
		free(rows);
		return -ENOMEM;
	}
	nrows = take_slots(bpf_map__fd(skel->maps.stats_slots), rows, 0, &nactive);
	for (size_t i = 0; i < nkeys && nactive < SQSCHED_MAX_PROCS; i++) {
		struct row *r = &rows[nrows];
		struct sqsched_stats kept;

		r->key = keys[i];
		if (bpf_map_lookup_elem(fd, &keys[i], &r->st))
			continue;
		bool active = take_stats(&r->st, &kept);
		if (r->st.exited) {
			if (!bpf_map_delete_elem(fd, &keys[i]))	/* the BPF side's count of them */
				__atomic_fetch_sub(&skel->bss->stats_spilled, 1, __ATOMIC_RELAXED);
		} else
			bpf_map_update_elem(fd, &keys[i], &kept, BPF_EXIST);
		r->active = active;
		nactive += active;
		nrows++;
	}
	free(keys);
	for (size_t i = 0; i < nrows; i++)	/* the active ones first */
		if (rows[i].active) {
			struct row t = rows[k];
			rows[k++] = rows[i];
			rows[i] = t;
		}
	out->r = rows;
	out->n = nactive;
	out->all = nrows;
	runs_in_progress(skel, out);
	return 0;
}

/* The Semaphores a table shows: -n's, or SQSCHED_SEMS_TOP. */
static size_t sems_shown(size_t n)
{
	return env.top_set ? sq_shown(n, env.top) : sq_shown(n, SQSCHED_SEMS_TOP);
}

static void print_text(struct row *rows, size_t n, const struct sqsched_sem *sems, size_t nsems,
		       const struct sqsched_sem_names *names, __u64 lost)
{
	size_t shown = sq_shown(n, env.top);
	__u64 all[SQ_MAX_SLOTS] = { 0 };
	const char *unit = env.millis ? "msecs" : "usecs";

	if (env.c.interval_ns || env.c.timestamp || env.events)
		printf("\n");
	if (env.c.timestamp)
		sq_print_time_header(stdout);
	qsort(rows, n, sizeof(*rows), by_order);
	printf("%-7s %5s %-20s %11s %10s %10s %10s %10s %11s %12s %10s %9s", "PID", "ID", "PROCESS", "ACTIVATIONS",
	       "CPU_ms", "RUNQ_us", "RUNQ_MAXus", "SEM_WAITS", "SEM_ms", "DELAY_ms", "IO_ms", "GC_ms");
	if (env.per_process)	/* the default table stays as it was */
		printf(" %10s %12s", "RUN_MAXms", "DLY_LATEms");
	printf("\n");
	for (size_t i = 0; i < shown; i++) {
		const struct sqsched_stats *s = &rows[i].st;
		char name[24];
		snprintf(name, sizeof(name), "%.20s", sq_printable(s->name[0] ? s->name : "?"));
		printf("%-7u %5llu %-20s %11llu %10.3f %10.1f %10.1f %10llu %11.3f %12.3f %10.3f %9.3f", rows[i].key.pid,
		       (unsigned long long)rows[i].key.id, name, (unsigned long long)s->activations, s->cpu_ns / 1e6,
		       s->runq_count ? s->runq_ns / 1e3 / s->runq_count : 0.0, s->runq_max_ns / 1e3,
		       (unsigned long long)s->sem_waits, s->sem_wait_ns / 1e6, s->delay_wait_ns / 1e6, s->io_wait_ns / 1e6,
		       s->gc_ns / 1e6);
		if (env.per_process)
			printf(" %10.3f %12.3f", s->max_run_ns / 1e6, s->delay_overshoot_max_ns / 1e6);
		printf("\n");
	}
	if (shown < n)
		printf("... %zu more process%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "es");
	sqsched_sems_print_text(stdout, sems, nsems, sems_shown(nsems), names);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < SQ_MAX_SLOTS; k++)
			all[k] += rows[i].st.slots[k];
	if (env.per_process) {
		for (size_t i = 0; i < shown; i++) {
			printf("\nrun-queue latency of PID %u process %llu (%s)\n", rows[i].key.pid,
			       (unsigned long long)rows[i].key.id, sq_printable(rows[i].st.name));
			sq_print_log2_hist(stdout, rows[i].st.slots, SQ_MAX_SLOTS, unit);
		}
	} else {
		printf("\nrun-queue latency (ready to running), every process\n");
		sq_print_log2_hist(stdout, all, SQ_MAX_SLOTS, unit);
	}
	if (lost)
		printf("Lost %llu (a kernel map or the event buffer was full)\n", (unsigned long long)lost);
	fflush(stdout);
}

static void print_json(struct row *rows, size_t n, const struct sqsched_sem *sems, size_t nsems,
		       const struct sqsched_sem_names *names, __u64 lost)
{
	size_t shown = sq_shown(n, env.top);
	char time[48];

	qsort(rows, n, sizeof(*rows), by_order);
	sq_format_iso_time(time, sizeof(time), sq_mono_ns());
	printf("{\"type\":\"summary\",\"time\":\"%s\",\"unit\":\"%s\",\"processes\":[", time, env.millis ? "ms" : "us");
	for (size_t i = 0; i < shown; i++) {
		const struct sqsched_stats *s = &rows[i].st;
		printf("%s{\"pid\":%u,\"id\":%llu,\"name\":", i ? "," : "", rows[i].key.pid,
		       (unsigned long long)rows[i].key.id);
		sq_json_str(stdout, s->name);
		printf(",\"activations\":%llu,\"cpu_ns\":%llu,\"runq\":{\"count\":%llu,\"total_ns\":%llu,\"max_ns\":%llu,"
		       "\"hist\":", (unsigned long long)s->activations, (unsigned long long)s->cpu_ns,
		       (unsigned long long)s->runq_count, (unsigned long long)s->runq_ns,
		       (unsigned long long)s->runq_max_ns);
		sq_json_log2_hist(stdout, s->slots, SQ_MAX_SLOTS);
		printf("},\"semaphore_waits\":%llu,\"semaphore_wait_ns\":%llu,\"delay_waits\":%llu,\"delay_wait_ns\":%llu,"
		       "\"io_waits\":%llu,\"io_wait_ns\":%llu,\"gcs\":%llu,\"gc_ns\":%llu,\"exited\":%s",
		       (unsigned long long)s->sem_waits, (unsigned long long)s->sem_wait_ns,
		       (unsigned long long)s->delay_waits, (unsigned long long)s->delay_wait_ns,
		       (unsigned long long)s->io_waits, (unsigned long long)s->io_wait_ns, (unsigned long long)s->gcs,
		       (unsigned long long)s->gc_ns, s->exited ? "true" : "false");
		/* after "exited": the fields before it are as they always were */
		printf(",\"max_run_ns\":%llu,\"delay_overshoots\":%llu,\"delay_overshoot_ns\":%llu,"
		       "\"delay_overshoot_max_ns\":%llu}", (unsigned long long)s->max_run_ns,
		       (unsigned long long)s->delay_overshoots, (unsigned long long)s->delay_overshoot_ns,
		       (unsigned long long)s->delay_overshoot_max_ns);
	}
	printf("],\"semaphores\":[");
	sqsched_sems_print_json(stdout, sems, sems_shown(nsems), names);
	printf("],\"lost\":%llu}\n", (unsigned long long)lost);
	fflush(stdout);
}

static int report(void *ctx, bool last)
{
	struct sqsched_bpf *skel = ctx;
	__u64 lost = sq_take(&skel->bss->lost);
	struct sqsched_sem *sems = NULL;
	struct rows rows;
	size_t nsems = 0;
	int err = take_rows(skel, &rows);
	struct sqsched_sem_names names = { .process = process_name, .ctx = &rows,
					   .names_fd = bpf_map__fd(skel->maps.names),
					   .vms_fd = bpf_map__fd(skel->maps.vms) };

	if (!err && (err = sqsched_sems_take(bpf_map__fd(skel->maps.sems), &sems, &nsems)))
		free(rows.r);
	if (err) {
		fprintf(stderr, "sqsched: reading the counts: %s\n", strerror(-err));
		return err;
	}
	if (env.c.format == SQ_FORMAT_JSON)
		print_json(rows.r, rows.n, sems, nsems, &names, lost);
	else
		print_text(rows.r, rows.n, sems, nsems, &names, lost);
	free(sems);
	free(rows.r);
	return 0;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct sqsched_event *e = data;
	char time[48];

	if (env.c.format == SQ_FORMAT_JSON) {
		sq_format_iso_time(time, sizeof(time), e->ts_ns);
		printf("{\"type\":\"switch\",\"time\":\"%s\",\"ts_ns\":%llu,\"pid\":%u,\"from\":%llu,\"to\":%llu,\"name\":",
		       time, (unsigned long long)e->ts_ns, e->pid, (unsigned long long)e->from,
		       (unsigned long long)e->to);
		sq_json_str(stdout, e->to_name);
		printf(",\"runq_ns\":%llu}\n", (unsigned long long)e->runq_ns);
	} else {
		sq_format_time(time, sizeof(time), e->ts_ns, true);
		printf("%-15s %-7u %6llu -> %-6llu %-20s", time, e->pid, (unsigned long long)e->from,
		       (unsigned long long)e->to, sq_printable(e->to_name));
		if (e->runq_ns)
			printf(" ready %.1f us", e->runq_ns / 1e3);
		printf("\n");
	}
	return sq_rb_yield();
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqsched_bpf *skel = NULL;
	int err;

	err = sq_start(&env.c, "sqsched", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	skel = sqsched_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqsched: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->millis = env.millis;
	skel->rodata->events = env.events;
	err = sqsched_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqsched: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	if (env.events && (err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), handle_event, NULL)))
		goto cleanup;
	err = sq_attach(&env.c, skel->progs.gc_end, "gc__incremental__end");
	if (!err)
		err = sq_attach(&env.c, skel->progs.gc_end, "gc__full__end");
	if (!err)
		err = sq_attach(&env.c, skel->progs.gc_begin, "gc__incremental__begin");
	if (!err)
		err = sq_attach(&env.c, skel->progs.gc_begin, "gc__full__begin");
	if (!err)
		err = sq_attach(&env.c, skel->progs.vm_start, "vm__start");
	if (!err) {
		/* the VMs running now, for the Semaphore table's method names (later ones
		 * announce themselves in vm__start) */
		sq_publish_running_vms(&env.c, bpf_map__fd(skel->maps.vms), "naming its methods");
		skel->bss->sq_batch_since_ns = sq_mono_ns();
		err = sq_attach(&env.c, skel->progs.sched_batch, "sched__batch");
	}
	if (err)
		goto cleanup;
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	sq_print_tracing(&env.c, "green-process scheduling");
	if (env.events && env.c.format == SQ_FORMAT_TEXT)
		printf("%-15s %-7s %6s    %-6s %s\n", "TIME", "PID", "FROM", "TO", "PROCESS");
	err = sq_loop_run(&loop, report, skel);

cleanup:
	sq_detach_all();
	sq_loop_close(&loop);
	sqsched_bpf__destroy(skel);
	return err ? SQ_EXIT_ERROR : 0;
}
