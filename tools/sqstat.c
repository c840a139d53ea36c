// SPDX-License-Identifier: BSD-2-Clause
/* sqstat - a live top of every sqvm on the host (like bcc's ustat): per VM, method and
 * block activations, allocations (objects and bytes), young and full collections with
 * their pause time, process switches, DNUs and class loads, each per second.
 *
 * The rates come from counters the VM keeps (SqVMCounters, probes/debug_offsets.h),
 * read from each VM's memory every interval, as jstat reads a JVM's perf counters: a VM
 * pays one increment per event whether or not anyone looks, and attaching costs it
 * nothing (tracing method__entry on every VM of the host, as ustat does, would slow them
 * all 10-1000x). The BPF program attaches to squeak:vm__start and vm__exit: a VM that
 * starts is seen at once, from its first moment, and a VM that exits is counted up to
 * its end, with the totals it had as it exited, however short it lived.
 *
 * As an exporter (--listen, --prom) it also attaches to the GC probes' ends and the
 * request probes, whose pauses and latencies (per route and status) the BPF program
 * buckets into histograms per VM; the metrics are those totals and histograms in
 * Prometheus's formats (tools/sqstat_prom.h), served over HTTP as every scrape asks,
 * read from the VMs at that moment. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqelf.h"
#include "sqbpf.h"
#include "sqhttp.h"
#include "sqloop.h"
#include "sqmem.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqproc.h"
#include "sqstat.h"
#include "sqstat_prom.h"
#include "sqstat.skel.h"

#define OPT_PROM 0x2001
#define OPT_NOCLEAR 0x2002
#define OPT_LISTEN 0x2003
#define MAX_VMS SQ_MAX_VMS

static struct env {
	struct sq_common c;
	bool noclear;		/* --noclear */
	int sort;		/* -s: a field index */
	long rows;		/* -n: 0 all */
	const char *prom;	/* --prom FILE */
	const char *listen;	/* --listen ADDR:PORT (a PORT alone made 127.0.0.1:PORT) */
} env = { .sort = 1 };

/* The columns, in order; -s takes their names. */
enum field { F_PID, F_CALLS, F_OBJNEW, F_BYTES, F_YGC, F_YGCTIME, F_FGC, F_FGCTIME, F_SWITCH,
	     F_DNU, F_LOAD, NFIELDS };
static const char *const field_names[NFIELDS] = {
	"pid", "calls", "objnew", "bytes", "ygc", "ygctime", "fgc", "fgctime", "switch", "dnu", "load",
};

const char *argp_program_version = "sqstat (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"A live top of every sqvm process on the host: calls, allocations, collections,\n"
"process switches, DNUs and class loads per second.\n"
"\n"
"USAGE: sqstat [-h] [-p PID] [--vm PATH] [--noclear] [-s FIELD] [-n ROWS]\n"
"              [--prom FILE] [--listen [ADDR:]PORT] [-d DURATION] [-j] [-v]\n"
"              [interval [count]]\n"
"\n"
"FIELDS (-s): pid calls objnew bytes ygc ygctime fgc fgctime switch dnu load\n"
"\n"
"EXAMPLES:\n"
"    sqstat                  # every VM, refreshed every second, busiest first\n"
"    sqstat --noclear 5      # every 5 seconds, without clearing the screen\n"
"    sqstat -s objnew -n 10  # the 10 VMs that allocate most\n"
"    sqstat -p 185 -j 1 10   # one VM, JSON lines, ten times\n"
"    sqstat --prom /var/lib/node_exporter/sqvm.prom 15   # for node_exporter\n"
"    sqstat --listen 9464         # a Prometheus exporter: http://127.0.0.1:9464/metrics\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "noclear", OPT_NOCLEAR, NULL, 0,
	  "Do not clear the screen between refreshes (ustat's -C; -C means CLASS in this family)", 0 },
	{ "sort", 's', "FIELD", 0, "Order rows by FIELD, largest first (default calls; pid ascending)", 0 },
	{ "top", 'n', "ROWS", 0, "At most ROWS rows (default: all)", 0 },
	{ "prom", OPT_PROM, "FILE", 0,
	  "Also write the totals as a Prometheus text file (for node_exporter's textfile collector), "
	  "replaced atomically at every refresh", 0 },
	{ "listen", OPT_LISTEN, "[ADDR:]PORT", 0,
	  "Serve the metrics to Prometheus at http://ADDR:PORT/metrics (a PORT alone: 127.0.0.1; :PORT: "
	  "every address; port 0: the kernel picks one, printed); no table then", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case OPT_NOCLEAR:
		env.noclear = true;
		break;
	case 's':
		env.sort = -1;
		for (int i = 0; i < NFIELDS; i++)
			if (strcmp(arg, field_names[i]) == 0)
				env.sort = i;
		if (env.sort < 0)
			argp_error(state, "unknown field '%s' (pid calls objnew bytes ygc ygctime fgc "
				   "fgctime switch dnu load)", arg);
		break;
	case 'n':
		if (sq_parse_long(arg, 0, 1000000, &env.rows))
			argp_error(state, "invalid number of rows '%s'", arg);
		break;
	case OPT_PROM:
		env.prom = arg;
		break;
	case OPT_LISTEN:
		/* a port alone is loopback's: every VM's command line is served, unauthenticated
		 * (":PORT" says every address, and means it) */
		if (arg[0] && strspn(arg, "0123456789") == strlen(arg)) {
			static char loopback[32];
			snprintf(loopback, sizeof(loopback), "127.0.0.1:%.8s", arg);
			arg = loopback;
		}
		env.listen = arg;
		break;
	case ARGP_KEY_END:
		if (!env.c.interval_ns)
			env.c.interval_ns = 1000000000ULL;
		/* Every VM on the host: none running yet is no error, VMs may come. */
		env.c.targets_optional = !env.c.pid && !env.c.vm;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ===================================================================== */
/* The VMs                                                               */
/* ===================================================================== */

/* The totals, from what was read of the VM (here, or by the BPF side as it exited). */
static void totals_of(const struct sqstat_raw *r, struct sqstat_totals *t)
{
	t->activations = r->counters.activations;
	t->allocations = r->counters.allocations;
	t->process_switches = r->counters.process_switches;
	t->dnus = r->counters.dnus;
	t->class_loads = r->counters.class_loads;
	t->primitive_failures = r->counters.primitive_failures;
	t->bytes_allocated = r->gc_bytes_allocated + (r->gc_top > r->gc_eden ? r->gc_top - r->gc_eden : 0);
	t->young_count = r->gc_young_count;
	t->full_count = r->gc_full_count;
	t->young_pause_ns = r->gc_young_pause_ns;
	t->full_pause_ns = r->gc_full_pause_ns;
}

struct vm {
	struct sq_vm vm;
	char cmdline[512];
	struct sqstat_totals prev, cur;
	__u64 prev_ns, cur_ns;		/* CLOCK_MONOTONIC of prev and cur */
	__u64 start_wall;		/* when it started, seconds since the epoch */
	__u64 serial;			/* rows_added when it was added: the oldest row is evicted first */
	unsigned long long ticks;	/* its process's start time (/proc/PID/stat; 0 unknown): a PID
					 * reused by another process is not this VM */
	bool exited;			/* seen exiting: cur holds its final totals */
	bool gone;			/* known from its events only (it never could be read) */
	int retries;			/* gone because it was still starting: opened again at the next
					 * refreshes, this many more times */
	int status;
	double rate[NFIELDS];
	struct sqstat_series series;	/* the request series it may have (sqstat_prom.h) */
};

/* A VM still starting at vm__start (not yet relocated) is opened again at each of this
 * many refreshes, one whose offsets the kernel could not read at the next one; never
 * waited for in the loop (a real VM is relocated before its vm__start, so only a fake
 * one stays "starting"), and at most RETRIES_PER_REFRESH opens a refresh. */
#define OPEN_RETRIES 5
#define RETRIES_PER_REFRESH 64
/* When the table is full and no row is gone or exited, the live rows are checked for
 * dead processes at most this often (a flood of starts must not make every one cost a
 * sweep of the table). */
#define SWEEP_NS 100000000ULL

static struct vm *vms;
static int nvms;
static __u64 rows_added, rows_dropped;	/* rows_dropped: evicted, or refused, because the table was full */

static struct vm *vm_of(pid_t pid)
{
	for (int i = 0; i < nvms; i++)
		if (vms[i].vm.pid == pid)
			return &vms[i];
	return NULL;
}

/* Is the row's process still there, and still the one it was (not a zombie, not a
 * new process that got its PID)? A SIGKILLed VM, or a fake one, never fires
 * vm__exit: this is how its row ends. */
static bool still_running(const struct vm *v)
{
	return sq_proc_alive(v->vm.pid, v->ticks);
}

/* When the process started: CLOCK_MONOTONIC ns and wall seconds (from /proc/PID/stat). */
static bool start_time(pid_t pid, __u64 *mono_ns, __u64 *wall_s)
{
	unsigned long long ticks;
	struct timespec boot_mono, now_rt;
	char state;

	if (!sq_proc_stat(pid, &state, &ticks))
		return false;
	/* starttime counts clock ticks since boot, and CLOCK_BOOTTIME is that clock; the
	 * difference from CLOCK_MONOTONIC is the time suspended, none on a server */
	clock_gettime(CLOCK_BOOTTIME, &boot_mono);
	clock_gettime(CLOCK_REALTIME, &now_rt);
	__u64 since_boot_ns = ticks * (1000000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK));
	__u64 boot_ns = boot_mono.tv_sec * 1000000000ULL + boot_mono.tv_nsec;
	__u64 age_ns = boot_ns > since_boot_ns ? boot_ns - since_boot_ns : 0;
	__u64 now = sq_mono_ns();
	*mono_ns = now > age_ns ? now - age_ns : 0;
	*wall_s = (__u64)now_rt.tv_sec - age_ns / 1000000000ULL;
	return true;
}

/* The VM's totals now, from its memory; false if it cannot be read (it has exited). */
static bool read_totals(const struct sq_vm *vm, struct sqstat_totals *t)
{
	const SqDebugOffsets *d = &vm->d;
	struct sqstat_raw r;
	bool ok = sq_read_mem(vm->pid, d->counters, &r.counters, sizeof(r.counters));

#define READ_WORD(f) ok = ok && sq_read_mem(vm->pid, d->f, &r.f, sizeof(r.f));
	SQSTAT_GC_WORDS(READ_WORD)
#undef READ_WORD
	if (ok)
		totals_of(&r, t);
	return ok;
}

static void forget_vm(struct sqstat_bpf *skel, pid_t pid);

/* The row of the oldest VM that is gone or has exited, else of the oldest whose process
 * is dead (checked at most every SWEEP_NS); -1 if every row is a live VM. */
static int oldest_evictable(void)
{
	static __u64 last_sweep;
	__u64 now;
	int victim = -1;

	for (int i = 0; i < nvms; i++)
		if ((vms[i].gone || vms[i].exited) && (victim < 0 || vms[i].serial < vms[victim].serial))
			victim = i;
	if (victim >= 0 || (now = sq_mono_ns()) - last_sweep < SWEEP_NS)
		return victim;
	last_sweep = now;
	for (int i = 0; i < nvms; i++)
		if (!still_running(&vms[i]) && (victim < 0 || vms[i].serial < vms[victim].serial))
			victim = i;
	return victim;
}

/* A row for a new VM, zeroed. When the table is full the oldest gone, exited or dead
 * VM's row makes room (its kernel entries forgotten): old VMs never keep a new one out.
 * NULL (counted) only when all MAX_VMS rows are live VMs. */
static struct vm *new_row(struct sqstat_bpf *skel)
{
	struct vm *v;
	int victim;

	if (nvms < MAX_VMS) {
		v = &vms[nvms++];
	} else if ((victim = oldest_evictable()) >= 0) {
		v = &vms[victim];
		if (skel)
			forget_vm(skel, v->vm.pid);
		rows_dropped++;
	} else {
		rows_dropped++;
		return NULL;
	}
	memset(v, 0, sizeof(*v));
	v->serial = ++rows_added;
	return v;
}

/* The row of pid's process; a row of an earlier process that had the same PID (its
 * start time differs) is dropped. */
static struct vm *row_of(struct sqstat_bpf *skel, pid_t pid, unsigned long long ticks)
{
	struct vm *v = vm_of(pid);

	if (v && ticks && v->ticks && v->ticks != ticks) {
		if (skel)
			forget_vm(skel, pid);
		*v = vms[--nvms];
		return NULL;
	}
	return v;
}

/* Reads a VM into row v (its PID set): its offsets, command line and start. */
static int open_row(struct sqstat_bpf *skel, struct vm *v, __u64 since_ns)
{
	__u64 mono, wall;
	int err = sq_vm_open(v->vm.pid, &v->vm, 0);	/* never wait in the loop: retried instead */

	if (err)
		return err;
	sq_cmdline(v->vm.pid, v->cmdline, sizeof(v->cmdline));
	if (!start_time(v->vm.pid, &mono, &wall)) {
		mono = sq_mono_ns();
		wall = (__u64)time(NULL);
	}
	v->prev_ns = since_ns ? since_ns : mono;
	v->start_wall = wall;
	/* the BPF side reads the totals when it exits: it needs the offsets' address */
	if (skel)
		sq_vm_publish(bpf_map__fd(skel->maps.vms), &v->vm);
	return 0;
}

/* The row of the process pid is now (by its start time): the one it has, with *fresh
 * false, or a new one with only its identity set; NULL when the table has no room. */
static struct vm *row_for(struct sqstat_bpf *skel, pid_t pid, bool *fresh)
{
	unsigned long long ticks = 0;
	struct vm *v;
	char state;

	sq_proc_stat(pid, &state, &ticks);
	*fresh = false;
	if ((v = row_of(skel, pid, ticks)))
		return v;
	if (!(v = new_row(skel)))
		return NULL;
	v->vm.pid = pid;
	v->ticks = ticks;
	*fresh = true;
	return v;
}

/* VMs that could not be read for want of rights, reported on stderr up to this many. */
#define NO_ACCESS_TOLD 16
static int no_access_told;

/* A VM seen for the first time; since_ns: when its counters were zero (its start).
 * *err (if not NULL) says why it could not be read. */
static struct vm *add_vm(struct sqstat_bpf *skel, pid_t pid, __u64 since_ns, bool quiet, int *errp)
{
	bool fresh;
	struct vm *v = row_for(skel, pid, &fresh);
	int err;

	if (!v || !fresh)
		return v;
	err = open_row(skel, v, since_ns);
	if (err) {
		/* a VM this sqstat may not read is worth saying even in a scan: its rights
		 * (a service without CAP_SYS_PTRACE) are wrong, not the VM; a few times */
		if (!quiet || (err == SQ_VM_NO_ACCESS && no_access_told++ < NO_ACCESS_TOLD))
			fprintf(stderr, "sqstat: PID %d: %s%s\n", pid, sq_vm_strerror(err),
				no_access_told == NO_ACCESS_TOLD ? " (further ones not reported)" : "");
		if (errp)
			*errp = err;
		*v = vms[--nvms];	/* the row just taken is the last, or moved there */
		return NULL;
	}
	return v;
}

/* A VM that could not be read at its vm__start (exited already, or lying, or still
 * starting): a row from its events alone, until its vm__exit or until its process is
 * found dead; opened again at the next refreshes, retries times. */
static struct vm *add_gone(struct sqstat_bpf *skel, pid_t pid, const struct sqstat_event *e, __u64 since_ns,
			   int retries)
{
	bool fresh;
	struct vm *v = row_for(skel, pid, &fresh);

	if (!v || !fresh)
		return v;
	sq_cmdline_text(v->cmdline, sizeof(v->cmdline), e->cmdline,
		     e->cmdline_len < sizeof(e->cmdline) ? e->cmdline_len : sizeof(e->cmdline));
	if (!v->cmdline[0])
		snprintf(v->cmdline, sizeof(v->cmdline), "?");
	v->prev_ns = v->cur_ns = since_ns;
	v->start_wall = (__u64)time(NULL);
	v->gone = true;
	v->retries = retries;
	return v;
}

static void scan(struct sqstat_bpf *skel)
{
	pid_t pids[MAX_VMS];
	int n = env.c.pid ? 1 : sq_scan_vms(pids, MAX_VMS, 0, 0);

	if (env.c.pid)
		pids[0] = env.c.pid;
	for (int i = 0; i < n; i++)
		add_vm(skel, pids[i], 0, !env.c.pid, NULL);
}

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct sqstat_event *e = data;
	struct sqstat_bpf *skel = ctx;
	struct vm *v;

	if (env.c.pid && (pid_t)e->pid != env.c.pid)
		return sq_rb_yield();
	if (e->type == SQSTAT_START) {
		int err = 0;
		if (!e->offsets_ok)	/* lying, or unreadable here: read once more at the next refresh */
			add_gone(skel, e->pid, e, e->ts_ns, 1);
		else if (!add_vm(skel, e->pid, e->ts_ns, true, &err) && err)	/* exited already */
			add_gone(skel, e->pid, e, e->ts_ns, err == SQ_VM_STARTING ? OPEN_RETRIES : 0);
	} else if ((v = vm_of(e->pid)) ||
		   (v = add_gone(skel, e->pid, e, e->start_ns ? e->start_ns : e->ts_ns, 0))) {
		if (v->exited)
			return sq_rb_yield();
		v->exited = true;
		v->status = e->status;
		v->cur_ns = e->ts_ns;
		if (e->have_raw)
			totals_of(&e->raw, &v->cur);
		else
			v->cur = v->prev;
	}
	return sq_rb_yield();
}

/* ===================================================================== */
/* A refresh                                                             */
/* ===================================================================== */

/* The VM's totals now, into cur (a scrape reads them too, between refreshes). A VM
 * whose process is dead (or is another process now) without a vm__exit, whose records
 * were all taken first, is shown as exited with status -1, once. */
static void read_current(struct vm *v, __u64 now)
{
	if (v->exited)
		return;
	v->cur_ns = now;
	if (!still_running(v) || (!v->gone && !read_totals(&v->vm, &v->cur))) {
		v->exited = true;
		v->status = -1;
		v->cur = v->prev;
	} else if (v->gone) {	/* its vm__start came, not yet its vm__exit */
		v->cur = v->prev;
	}
}

/* The rows of VMs not readable at their vm__start (still starting, or their offsets
 * not readable in the kernel), opened again at each refresh while they have retries
 * left, at most RETRIES_PER_REFRESH of them (a flood of fake starts must not stall the
 * loop): once readable they are rows like any other. */
static void retry_starting(struct sqstat_bpf *skel)
{
	int tried = 0;

	for (int i = 0; i < nvms && tried < RETRIES_PER_REFRESH; i++) {
		struct vm *v = &vms[i];
		if (!v->gone || v->exited || v->retries <= 0 || !still_running(v))
			continue;
		tried++;
		v->retries--;
		if (open_row(skel, v, v->prev_ns) == 0)
			v->gone = false;
	}
}

static void compute(struct vm *v, __u64 now)
{
	const struct sqstat_totals *a = &v->prev, *b = &v->cur;
	double dt;

	read_current(v, now);
	dt = v->cur_ns > v->prev_ns ? (v->cur_ns - v->prev_ns) / 1e9 : 0;
	if (dt <= 0)
		dt = 1e-9;
#define RATE(f, field) v->rate[f] = (b->field - a->field) / dt
	v->rate[F_PID] = v->vm.pid;
	RATE(F_CALLS, activations);
	RATE(F_OBJNEW, allocations);
	RATE(F_BYTES, bytes_allocated);
	RATE(F_YGC, young_count);
	RATE(F_FGC, full_count);
	RATE(F_SWITCH, process_switches);
	RATE(F_DNU, dnus);
	RATE(F_LOAD, class_loads);
#undef RATE
	v->rate[F_YGCTIME] = (b->young_pause_ns - a->young_pause_ns) / 1e6 / dt;	/* ms/s */
	v->rate[F_FGCTIME] = (b->full_pause_ns - a->full_pause_ns) / 1e6 / dt;
}

static int by_field(const void *pa, const void *pb)
{
	const struct vm *a = pa, *b = pb;

	if (env.sort == F_PID)
		return a->vm.pid - b->vm.pid;
	if (a->rate[env.sort] != b->rate[env.sort])
		return a->rate[env.sort] < b->rate[env.sort] ? 1 : -1;
	return a->vm.pid - b->vm.pid;
}

/* 1234567 -> "1.2M": rates in a fixed width. */
static void human(char *buf, size_t len, double v)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.1fK", v / 1e3);
	else if (v == (long long)v)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "%.1f", v);
}

static void print_text(int shown)
{
	char now[48], cols[NFIELDS][16];
	double load[3] = { 0 };

	if (!env.noclear && isatty(STDOUT_FILENO))
		printf("\033[H\033[2J");
	else if (env.c.timestamp || env.c.interval_ns)
		printf("\n");
	sq_format_time(now, sizeof(now), sq_mono_ns(), false);
	getloadavg(load, 3);
	printf("%s loadavg: %.2f %.2f %.2f, %d VM%s\n\n", now, load[0], load[1], load[2], nvms,
	       nvms == 1 ? "" : "s");
	printf("%-7s %-28s %8s %8s %8s %6s %8s %6s %8s %8s %6s %6s\n", "PID", "CMDLINE", "CALLS/s",
	       "OBJNEW/s", "BYTES/s", "YGC/s", "YGCms/s", "FGC/s", "FGCms/s", "SWITCH/s", "DNU/s", "LOAD/s");
	for (int i = 0; i < shown; i++) {
		struct vm *v = &vms[i];
		char cmd[40];
		for (int f = 1; f < NFIELDS; f++)
			human(cols[f], sizeof(cols[f]), v->rate[f]);
		snprintf(cmd, sizeof(cmd), "%s%.28s", v->exited ? "(exited) " : "", v->cmdline);
		cmd[28] = 0;
		printf("%-7d %-28s %8s %8s %8s %6s %8s %6s %8s %8s %6s %6s\n", v->vm.pid, cmd, cols[F_CALLS],
		       cols[F_OBJNEW], cols[F_BYTES], cols[F_YGC], cols[F_YGCTIME], cols[F_FGC], cols[F_FGCTIME],
		       cols[F_SWITCH], cols[F_DNU], cols[F_LOAD]);
	}
	fflush(stdout);
}

static void print_json(int shown)
{
	char now[48];

	sq_format_iso_time(now, sizeof(now), sq_mono_ns());
	printf("{\"time\":\"%s\",\"vms\":[", now);
	for (int i = 0; i < shown; i++) {
		struct vm *v = &vms[i];
		printf("%s{\"pid\":%d,\"cmdline\":", i ? "," : "", v->vm.pid);
		sq_json_str(stdout, v->cmdline);
		printf(",\"calls_per_s\":%.1f,\"allocations_per_s\":%.1f,\"bytes_per_s\":%.1f,"
		       "\"young_gcs_per_s\":%.2f,\"young_gc_ms_per_s\":%.3f,\"full_gcs_per_s\":%.2f,"
		       "\"full_gc_ms_per_s\":%.3f,\"process_switches_per_s\":%.1f,\"dnus_per_s\":%.2f,"
		       "\"class_loads_per_s\":%.2f,\"exited\":%s",
		       v->rate[F_CALLS], v->rate[F_OBJNEW], v->rate[F_BYTES], v->rate[F_YGC], v->rate[F_YGCTIME],
		       v->rate[F_FGC], v->rate[F_FGCTIME], v->rate[F_SWITCH], v->rate[F_DNU], v->rate[F_LOAD],
		       v->exited ? "true" : "false");
		printf(",\"totals\":{\"calls\":%llu,\"allocations\":%llu,\"bytes\":%llu,\"young_gcs\":%llu,"
		       "\"young_gc_ns\":%llu,\"full_gcs\":%llu,\"full_gc_ns\":%llu,\"process_switches\":%llu,"
		       "\"dnus\":%llu,\"class_loads\":%llu,\"primitive_failures\":%llu}",
		       (unsigned long long)v->cur.activations, (unsigned long long)v->cur.allocations,
		       (unsigned long long)v->cur.bytes_allocated, (unsigned long long)v->cur.young_count,
		       (unsigned long long)v->cur.young_pause_ns, (unsigned long long)v->cur.full_count,
		       (unsigned long long)v->cur.full_pause_ns, (unsigned long long)v->cur.process_switches,
		       (unsigned long long)v->cur.dnus, (unsigned long long)v->cur.class_loads,
		       (unsigned long long)v->cur.primitive_failures);
		if (v->exited)
			printf(",\"status\":%d", v->status);
		printf("}");
	}
	printf("]}\n");
	fflush(stdout);
}

/* PIDs whose kernel entries are to go, sorted at the flush: forgotten in one pass over
 * each map at the end of a refresh (or once FORGET_MAX are waiting), not one pass per
 * VM, which a flood of short-lived fake VMs made cost the loop a third of a second. */
#define FORGET_MAX 8192
static pid_t forgotten[FORGET_MAX];
static size_t nforgotten;

static void flush_forgotten(struct sqstat_bpf *skel)
{
	if (!nforgotten)
		return;
	sq_map_forget_pids(skel->maps.hists, forgotten, nforgotten);
	sq_map_forget_pids(skel->maps.open_requests, forgotten, nforgotten);
	sq_map_forget_pids(skel->maps.names, forgotten, nforgotten);
	nforgotten = 0;
}

/* A VM gone from the table: its histograms, the requests it left open (killed, it ended
 * none) and its names go from the kernel's maps and the names cache, so that an
 * exporter that runs for months holds only the living VMs', and a new VM that gets the
 * same PID starts afresh. */
static void forget_vm(struct sqstat_bpf *skel, pid_t pid)
{
	if (nforgotten == FORGET_MAX)
		flush_forgotten(skel);
	forgotten[nforgotten++] = pid;
	bpf_map_delete_elem(bpf_map__fd(skel->maps.vms), &(__u32){ (__u32)pid });	/* killed: no vm__exit took it */
	sq_names_forget(pid);
}

struct run {
	struct sqstat_bpf *skel;
	struct sq_loop *loop;
};

/* Records read before a scrape or a refresh, at most (of SQ_RB_BATCH each): a binary that
 * fires vm__start in a loop must not keep a scrape from being answered. */
#define DRAIN_BATCHES 16

/* The exporter's input (sqstat_prom.h): the running VMs' rows, in the table's order. */
static const struct sqstat_metrics *metrics_of(struct sqstat_bpf *skel)
{
	static struct sqstat_prom_vm running[MAX_VMS];
	static struct sqstat_metrics m;

	m = (struct sqstat_metrics){ .skel = skel, .vms = running, .dropped_vms = rows_dropped };
	for (int i = 0; i < nvms; i++)
		if (!vms[i].exited)
			running[m.nvms++] = (struct sqstat_prom_vm){ .pid = vms[i].vm.pid, .cmdline = vms[i].cmdline,
								     .totals = &vms[i].cur, .start_wall = vms[i].start_wall,
								     .series = &vms[i].series };
	return &m;
}

/* --listen: a scrape. The VMs' starts and exits that have arrived first, then their
 * totals as they are at this moment. */
static const struct sqstat_metrics *scrape(void *ctx)
{
	struct run *run = ctx;
	__u64 now = sq_mono_ns();

	sq_loop_drain(run->loop, DRAIN_BATCHES);
	for (int i = 0; i < nvms; i++)
		read_current(&vms[i], now);
	return metrics_of(run->skel);
}

static int refresh(void *ctx, bool last)
{
	struct run *run = ctx;
	struct sqstat_bpf *skel = run->skel;
	__u64 now = sq_mono_ns();
	int shown, kept = 0, err = 0;

	/* Whatever the wake-up, take the VMs' start and exit records first: a signal and a
	 * record can be ready at once, and the signal may be read first. */
	sq_loop_drain(run->loop, DRAIN_BATCHES);

	if (!env.c.pid)
		scan(skel);	/* VMs of binaries without the probes attached (another build) */
	retry_starting(skel);
	for (int i = 0; i < nvms; i++)
		compute(&vms[i], now);
	qsort(vms, nvms, sizeof(*vms), by_field);
	shown = env.rows > 0 && env.rows < nvms ? (int)env.rows : nvms;
	if (env.listen)
		;	/* an exporter: its output is the metrics */
	else if (env.c.format == SQ_FORMAT_JSON)
		print_json(shown);
	else
		print_text(shown);
	if (env.prom)
		err = sqstat_write_prom(env.prom, metrics_of(skel));
	/* the next interval starts here; exited VMs were shown once */
	for (int i = 0; i < nvms; i++) {
		if (vms[i].exited) {
			forget_vm(skel, vms[i].vm.pid);
			continue;
		}
		vms[i].prev = vms[i].cur;
		vms[i].prev_ns = vms[i].cur_ns;
		vms[kept++] = vms[i];
	}
	nvms = kept;
	flush_forgotten(skel);
	return err;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

/* The VM binaries besides -p's, --vm's or PATH's sqvm: the executables of the VMs
 * running now (other builds may be among them). Each is opened once, now, and named
 * /proc/self/fd/N from then on (kept open for sqstat's life): a VM that exits before
 * the attach leaves its binary attachable, and one that has exited already is skipped,
 * never an error (security review, finding 8). The same file twice (dev and inode) is
 * one target. */
static void add_running_binaries(void)
{
	pid_t pids[MAX_VMS];
	int n = sq_scan_vms(pids, MAX_VMS, 0, 0);

	/* a service with too few rights finds no VM: say so, or it seems to work */
	if (sq_scan_denied())
		fprintf(stderr, "sqstat: %d processes could not be examined (their executables are not ours to "
			"read: CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH?): VMs among them are not shown\n", sq_scan_denied());
	for (int i = 0; i < n; i++) {
		char exe[64], path[64];
		int fd, nbins = env.c.nbins;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", pids[i]);
		fd = sq_elf_open(exe);	/* a regular file, opened without blocking */
		if (fd < 0)
			continue;	/* gone already */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		sq_add_target(&env.c, path, exe);	/* skips a binary known by device and inode */
		if (env.c.nbins == nbins)	/* not kept: known, or no probes */
			close(fd);
	}
}

static void print_tracing(const struct sq_http *http)
{
	FILE *f = env.c.format == SQ_FORMAT_TEXT ? stdout : stderr;
	char every[32];

	if (env.c.verbose)
		fprintf(stderr, "sqstat: vm__start and vm__exit attached in %d binar%s\n", env.c.nbins,
			env.c.nbins == 1 ? "y" : "ies");
	sq_format_duration(every, sizeof(every), env.c.interval_ns);
	if (env.c.pid)
		fprintf(f, "Tracing VM counters of PID %d, every %s", env.c.pid, every);
	else
		fprintf(f, "Tracing VM counters of every sqvm on the host, every %s", every);
	if (http)
		fprintf(f, "; metrics at %s", sq_http_url(http));
	fprintf(f, "... Hit Ctrl-C to end.\n");
	fflush(NULL);
}

/* The VMs' starts and exits; as an exporter, the ends of their collections too. */
static int attach(struct sqstat_bpf *skel, bool exporter)
{
	int err = 0;

	if (!env.c.nbins)
		return 0;
	err = sq_attach(&env.c, skel->progs.vm_start, "vm__start");
	if (!err)
		err = sq_attach(&env.c, skel->progs.vm_exit, "vm__exit");
	if (!err && exporter)
		err = sq_attach(&env.c, skel->progs.gc_young_end, "gc__incremental__end");
	if (!err && exporter)
		err = sq_attach(&env.c, skel->progs.gc_full_end, "gc__full__end");
	if (!err && exporter)
		err = sq_attach(&env.c, skel->progs.request_begin, "request__begin");
	if (!err && exporter)
		err = sq_attach(&env.c, skel->progs.request_end, "request__end");
	if (!err && exporter)
		err = sq_attach(&env.c, skel->progs.process_exit, "process__exit");
	return err;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[interval [count]]", doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqstat_bpf *skel = NULL;
	struct run run = { .loop = &loop };
	struct sq_http *http = NULL;
	bool exporter;
	int err = 0;

	vms = calloc(MAX_VMS, sizeof(*vms));
	if (!vms)
		return SQ_EXIT_ERROR;
	err = sq_start(&env.c, "sqstat", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	if (!env.c.pid)
		add_running_binaries();
	skel = sqstat_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqstat: cannot open the BPF object: %s\n", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	exporter = env.listen || env.prom;
	if (!exporter) {	/* the table has no histograms: no GC or request probe to turn on */
		bpf_program__set_autoload(skel->progs.gc_young_end, false);
		bpf_program__set_autoload(skel->progs.gc_full_end, false);
		bpf_program__set_autoload(skel->progs.request_begin, false);
		bpf_program__set_autoload(skel->progs.request_end, false);
		bpf_program__set_autoload(skel->progs.process_exit, false);
	}
	err = sqstat_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqstat: cannot load the BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = sq_loop_open(&loop, &env.c);
	if (err)
		goto cleanup;
	err = sq_loop_add_ringbuf(&loop, bpf_map__fd(skel->maps.rb), handle_event, skel);
	if (err)
		goto cleanup;
	run.skel = skel;
	if (env.listen && !(http = sqstat_serve(&loop, env.listen, scrape, &run))) {
		err = -EINVAL;
		goto cleanup;
	}
	/* Attach first, then scan: a VM starting in between is seen by both, never by none. */
	err = attach(skel, exporter);
	if (err)
		goto cleanup;
	scan(skel);
	if (env.c.pid && !vm_of(env.c.pid)) {
		err = -ENOENT;
		goto cleanup;
	}
	err = sq_loop_restart_timer(&loop);
	if (err)
		goto cleanup;
	print_tracing(http);
	err = sq_loop_run(&loop, refresh, &run);

cleanup:
	sq_detach_all();
	sq_http_close(http);
	sq_loop_close(&loop);
	sqstat_bpf__destroy(skel);
	free(vms);
	return err ? SQ_EXIT_ERROR : 0;
}
