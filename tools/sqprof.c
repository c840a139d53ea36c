// SPDX-License-Identifier: BSD-2-Clause
/* sqprof - a sampling profiler for sqvm: samples the Smalltalk stacks of one VM or of
 * every VM, on the CPU clock (where the time goes) or at the VM's allocation samples
 * (where the bytes go), and prints a self/total table, folded stacks, JSON, or an
 * interactive flame graph. The BPF program walks the frames in the kernel and counts
 * stacks of Method * addresses; names are read here, once per method. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqloop.h"
#include "sqmem.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqproc.h"
#include "sqprof.h"
#include "sqprof.skel.h"
#include "sqprof_dir.h"
#include "sqprof_export.h"
#include "sqprof_native.h"
#include "sqprof_report.h"
#include "sqprof_svg.h"
#include "sqprof_wall.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define OPT_MAX_DEPTH 0x2001
#define OPT_SVG 0x2002
#define OPT_TITLE 0x2003
#define OPT_SPEEDSCOPE 0x2007
#define OPT_PPROF 0x2008
#define OPT_ALLOC 0x2005
#define OPT_EVERY 0x2009
#define OPT_OUT 0x200a
#define OPT_KEEP 0x200b
#define OPT_WALL 0x200c

/* How often the VMs are looked for again when profiling every VM. */
#define RESCAN_NS 250000000ULL

static struct env {
	struct sq_common c;
	long hz;			/* -F */
	__u64 duration_ns;		/* -d or positional; 0: until Ctrl-C */
	long max_depth;			/* --max-depth */
	bool folded;			/* -f */
	const char *svg;		/* --svg FILE */
	const char *speedscope;		/* --speedscope FILE */
	const char *pprof;		/* --pprof FILE */
	const char *title;		/* --title */
	long top;			/* -n */
	bool sort_total;		/* --sort total */
	bool alloc;			/* --alloc */
	bool wall;			/* --wall */
	bool kernel_stacks;		/* -K */
	bool user_stacks;		/* -U */
	bool per_process;		/* -P */
	const char *input;		/* -i FILE: folded stacks instead of sampling */
	__u64 every_ns;			/* --every: one profile per period, into --out */
	const char *out;		/* --out DIR */
	long keep;			/* --keep: files kept per VM (0: all) */
} env = { .hz = 99, .max_depth = SQPROF_DEFAULT_DEPTH, .top = 20 };

const char *argp_program_version = "sqprof (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Sample the Smalltalk stacks of sqvm processes: where the CPU time goes or,\n"
"with --alloc, where the bytes are allocated. Prints a table of methods (self\n"
"and total), folded stacks, JSON, or an interactive flame graph (SVG).\n"
"\n"
"USAGE: sqprof [-h] [-p PID] [--vm PATH] [-F HZ] [-d DURATION] [--max-depth N]\n"
"              [-f | -j] [--svg FILE] [--title TEXT] [-n N] [--sort self|total]\n"
"              [--alloc | --wall] [-K] [-U] [-P] [-T] [-v] [duration]\n"
"       sqprof --every DURATION --out DIR [--keep N] [-p PID] [--alloc] [-F HZ] [-d DURATION]\n"
"       sqprof -i FOLDED [--svg FILE] [-f | -j] [-n N] [--alloc]\n"
"\n"
"EXAMPLES:\n"
"    sqprof -p 185                # CPU profile until Ctrl-C or the VM exits\n"
"    sqprof -p 185 10             # ... for 10 seconds\n"
"    sqprof -p 185 -F 999 -d 5    # 999 samples a second, for 5 seconds\n"
"    sqprof -p 185 --svg cpu.svg  # also write a flame graph, for a browser\n"
"    sqprof -p 185 -f > cpu.txt   # folded stacks (flamegraph.pl, speedscope)\n"
"    sqprof -i cpu.txt --svg cpu.svg   # a flame graph of saved folded stacks\n"
"    sqprof -p 185 --alloc --svg alloc.svg   # where the bytes are allocated\n"
"    sqprof -p 185 --wall -f      # wall clock: every green process, running or\n"
"                                 # waiting, under its name and state\n"
"    sqprof -p 185 -n 0 --sort total  # every method, by total (inclusive) time\n"
"    sqprof -p 185 -K             # the kernel's stack above the Smalltalk one\n"
"    sqprof -d 10 -P              # every VM on the machine, a root per process\n"
"    sqprof -p 185 -j             # JSON: methods and stacks\n"
"    sqprof --every 10s --out /var/lib/sqprof --keep 360   # continuous: a pprof file\n"
"                                 # per VM every 10 s, the last hour of them kept\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "frequency", 'F', "HZ", 0, "Samples a second of CPU time (default 99)", 0 },
	{ "max-depth", OPT_MAX_DEPTH, "N", 0,
	  "Frames kept per stack (default 127, at most 1024); deeper stacks are kept, truncated", 0 },
	{ "folded", 'f', NULL, 0, "Print folded stacks: one 'frame;frame;frame count' line each", 0 },
	{ "svg", OPT_SVG, "FILE", 0, "Also write an interactive flame graph (SVG) to FILE", 0 },
	{ "title", OPT_TITLE, "TEXT", 0, "The flame graph's title", 0 },
	{ "speedscope", OPT_SPEEDSCOPE, "FILE", 0, "Also write the profile for speedscope (its JSON file format) to FILE", 0 },
	{ "pprof", OPT_PPROF, "FILE", 0, "Also write the profile as gzipped pprof protobuf (go tool pprof) to FILE", 0 },
	{ "top", 'n', "N", 0, "Methods in the table (default 20; 0: all)", 0 },
	{ "sort", 's', "ORDER", 0, "Table order: self (default) or total", 0 },
	{ "alloc", OPT_ALLOC, NULL, 0,
	  "Allocation profile: sample at squeak:object__alloc__sample, weighted by bytes", 0 },
	{ "wall", OPT_WALL, NULL, 0,
	  "Wall-clock profile: at HZ, every live green process whatever its state; stacks start with its name and state", 0 },
	{ "kernel-stacks", 'K', NULL, 0, "Add the kernel's stack (frames marked _[k])", 0 },
	{ "user-stacks", 'U', NULL, 0, "Add the VM's own C frames (exact with frame pointers)", 0 },
	{ "per-process", 'P', NULL, 0, "One root frame per process ([pid N])", 0 },
	{ "input", 'i', "FILE", 0, "Read folded stacks from FILE ('-': stdin) instead of sampling", 0 },
	{ "every", OPT_EVERY, "DURATION", 0,
	  "Continuous profiling: write one gzipped pprof file per VM every DURATION (at least 1 s) into --out", 0 },
	{ "out", OPT_OUT, "DIR", 0, "The folder of --every's files: DIR/sqprof-PID-START.pb.gz", 0 },
	{ "keep", OPT_KEEP, "N", 0, "With --every: keep the newest N files of each VM, remove older ones (default 0: all)", 0 },
	{},
};

/* The options that do not go together, once all are known. */
static void check_args(struct argp_state *state)
{
	if (!env.every_ns != !env.out)
		argp_error(state, "--every and --out go together: one profile per period, into the folder");
	if (env.every_ns && (env.input || env.folded || env.c.format == SQ_FORMAT_JSON || env.svg ||
			     env.speedscope || env.pprof || env.per_process))
		argp_error(state, "--every writes its profiles into --out: it takes no -i, -f, -j, -P, "
			   "--svg, --speedscope or --pprof");
	if (env.folded && env.c.format == SQ_FORMAT_JSON)
		argp_error(state, "--folded and --json are two outputs: choose one");
	if (env.input && (env.c.pid || env.duration_ns || env.kernel_stacks || env.user_stacks))
		argp_error(state, "-i reads a saved profile: it takes no -p, duration, -K or -U");
	if (env.wall && (env.alloc || env.kernel_stacks || env.user_stacks))
		argp_error(state, "--wall samples waiting processes, which run no code: it takes no --alloc, -K or -U");
	if (env.alloc && env.kernel_stacks)
		argp_error(state, "-K needs CPU samples: an allocation is in user space");
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	long v;
	int ret;

	switch (key) {
	case 'F':
		if (sq_parse_long(arg, 1, 100000, &env.hz))
			argp_error(state, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		return 0;
	case 'd':
	case ARGP_KEY_ARG:
		if (key == ARGP_KEY_ARG && state->arg_num > 0)
			argp_error(state, "unexpected argument '%s'", arg);
		if (sq_parse_duration(arg, 1000000000ULL, &env.duration_ns) || !env.duration_ns)
			argp_error(state, "invalid duration '%s' (seconds, or with a unit: 500ms)", arg);
		return 0;
	case OPT_MAX_DEPTH:
		if (sq_parse_long(arg, 1, SQPROF_MAX_DEPTH, &env.max_depth))
			argp_error(state, "invalid --max-depth '%s' (1 to %d)", arg, SQPROF_MAX_DEPTH);
		return 0;
	case 'f':
		env.folded = true;
		return 0;
	case OPT_SVG:
		env.svg = arg;
		return 0;
	case OPT_SPEEDSCOPE:
		env.speedscope = arg;
		return 0;
	case OPT_PPROF:
		env.pprof = arg;
		return 0;
	case OPT_TITLE:
		env.title = arg;
		return 0;
	case 'n':
		if (sq_parse_long(arg, 0, INT_MAX, &v))
			argp_error(state, "invalid number of methods '%s'", arg);
		env.top = v;
		return 0;
	case 's':
		if (strcmp(arg, "self") != 0 && strcmp(arg, "total") != 0)
			argp_error(state, "invalid --sort '%s' (self or total)", arg);
		env.sort_total = strcmp(arg, "total") == 0;
		return 0;
	case OPT_ALLOC:
		env.alloc = true;
		return 0;
	case OPT_WALL:
		env.wall = true;
		return 0;
	case 'K':
		env.kernel_stacks = true;
		return 0;
	case 'U':
		env.user_stacks = true;
		return 0;
	case 'P':
		env.per_process = true;
		return 0;
	case 'i':
		env.input = arg;
		return 0;
	case OPT_EVERY:
		if (sq_parse_duration(arg, 1000000000ULL, &env.every_ns) || env.every_ns < 1000000000ULL)
			argp_error(state, "invalid --every '%s' (at least 1 s: the files are named by the second)", arg);
		return 0;
	case OPT_OUT:
		env.out = arg;
		return 0;
	case OPT_KEEP:
		if (sq_parse_long(arg, 0, INT_MAX, &v))
			argp_error(state, "invalid --keep '%s'", arg);
		env.keep = v;
		return 0;
	case ARGP_KEY_END:
		check_args(state);
		return 0;
	default:
		ret = sq_parse_common_opt(key, arg, state, &env.c);
		return ret;
	}
}

/* ===================================================================== */
/* The VMs                                                               */
/* ===================================================================== */

/* A VM being sampled: where its memory is, and what its profiles' labels and period
 * say of it. A VM is its PID and its start time: a new process that gets the PID of
 * one that exited is a new VM. */
struct prof_vm {
	struct sq_vm vm;
	unsigned long long ticks;	/* its start time (sqproc.h); 0: not known */
	char cmdline[512];
	__u64 alloc_period;		/* its --alloc-sample bytes (0: not known) */
	bool gone;			/* --every: exited, its last file written */
};

static struct prof_vm *vms;
static int nvms;
/* The table's size: SQ_MAX_VMS, the BPF vms map's. The environment variable
 * SQPROF_MAX_VMS lowers it, for the tests only (tests/sqprof.sh: more VMs come and go
 * than it holds); it is not documented for users, and never raises it. */
static int max_vms = SQ_MAX_VMS;
static int refused_shown;	/* the VMs last said not profiled for want of room */
static dev_t only_dev;		/* --vm: only processes running this file */
static ino_t only_ino;

static struct prof_vm *prof_vm_of(pid_t pid)
{
	for (int i = 0; i < nvms; i++)
		if (vms[i].vm.pid == pid)
			return &vms[i];
	return NULL;
}

static struct sq_vm *vm_of(pid_t pid)
{
	struct prof_vm *v = prof_vm_of(pid);

	return v ? &v->vm : NULL;
}

/* The cmdline label of pid's samples. */
static const char *cmdline_of(void *ctx, pid_t pid)
{
	struct prof_vm *v = prof_vm_of(pid);

	return v ? v->cmdline : NULL;
}

/* The VMs marked gone leave the table, and what the tool and the kernel kept of them
 * goes too: their vms entries (else a new process with the PID would be read at the old
 * one's addresses), their names' copies (one pass over the map for all of them), the
 * names cache and the -U mappings. So a profiler that runs for months holds only the
 * VMs alive at its last period, and its table never fills with the dead. */
static void forget_gone(struct sqprof_bpf *skel)
{
	pid_t pids[SQ_MAX_VMS];
	size_t n = 0;

	for (int i = 0; i < nvms;) {
		if (!vms[i].gone) {
			i++;
			continue;
		}
		pids[n++] = vms[i].vm.pid;
		if (skel)
			bpf_map_delete_elem(bpf_map__fd(skel->maps.vms), &(__u32){ (__u32)vms[i].vm.pid });
		sq_names_forget(vms[i].vm.pid);
		sqp_native_forget(vms[i].vm.pid);
		if (env.c.verbose)
			fprintf(stderr, "sqprof: PID %d has exited: forgotten\n", vms[i].vm.pid);
		vms[i] = vms[--nvms];
	}
	if (skel)
		sq_map_forget_pids(skel->maps.names, pids, n);
}

/* Reads pid's debug offsets and hands them to the BPF program. quiet: a process found by
 * scanning (it may be starting, or exiting); else errors are the user's to see. 0, 1 if
 * the table is full (the VM is not profiled; nothing said), or -1. */
static int add_vm(struct sqprof_bpf *skel, pid_t pid, bool quiet)
{
	struct prof_vm *v = prof_vm_of(pid);
	unsigned long long ticks = 0;
	struct sq_vm vm;
	char state;
	int err;

	sq_proc_stat(pid, &state, &ticks);
	if (v && (!ticks || v->ticks == ticks))
		return 0;
	if (v) {
		/* The VM that had the PID has exited since the last scan. Its samples since
		 * (--every: since the period began) are dropped with it: they are keyed by
		 * the PID, as the new VM's are, and the new VM's so far were taken at the old
		 * one's addresses. A rare event: one pass over the stacks map. */
		v->gone = true;
		forget_gone(skel);
		if (skel)
			sq_map_forget_pids(skel->maps.stacks, &(pid_t){ pid }, 1);
	}
	if (nvms == max_vms) {	/* before opening: a full table costs no reads at each scan */
		if (!quiet)
			fprintf(stderr, "sqprof: more than %d VMs\n", max_vms);
		return 1;
	}
	err = sq_vm_open(pid, &vm, quiet ? 0 : 500);
	if (err) {
		if (!quiet && vm.exe[0])
			fprintf(stderr, "sqprof: PID %d (%s): %s\n", pid, sq_printable(vm.exe), sq_vm_strerror(err));
		else if (!quiet)
			fprintf(stderr, "sqprof: PID %d: %s\n", pid, sq_vm_strerror(err));
		return -1;
	}
	if (skel && (err = sq_vm_publish(bpf_map__fd(skel->maps.vms), &vm))) {
		fprintf(stderr, "sqprof: PID %d: cannot add it to the BPF map: %s\n", pid, strerror(-err));
		return -1;
	}
	if (env.user_stacks && skel)
		sqp_native_add_process(pid);
	vms[nvms] = (struct prof_vm){ .vm = vm, .ticks = ticks };
	sq_cmdline(pid, vms[nvms].cmdline, sizeof(vms[nvms].cmdline));
	if (vm.d.alloc_sample_bytes)
		sq_read_mem(pid, vm.d.alloc_sample_bytes, &vms[nvms].alloc_period, sizeof(vms[nvms].alloc_period));
	nvms++;
	if (env.c.verbose)
		fprintf(stderr, "sqprof: PID %d (%s): interp_current at 0x%llx, load bias 0x%llx\n", pid,
			sq_printable(vm.exe), (unsigned long long)vm.d.current_process, (unsigned long long)vm.bias);
	return 0;
}

/* Every VM running now (or running the --vm binary). VMs the full table has no room for
 * are said on stderr, each time there are more of them than last said (so a steady
 * state is one line, not one a scan); they are added at the first scan with room (with
 * --every, after the period in which others exited). */
static void scan_vms(struct sqprof_bpf *skel)
{
	pid_t pids[SQ_MAX_VMS];
	int n = sq_scan_vms(pids, SQ_MAX_VMS, only_dev, only_ino), refused = 0;

	for (int i = 0; i < n; i++)
		refused += add_vm(skel, pids[i], true) == 1;
	if (refused > refused_shown)
		fprintf(stderr, "sqprof: %d VM%s not profiled: the table of %d VMs is full%s\n", refused,
			refused == 1 ? "" : "s", max_vms,
			env.every_ns ? " (exited ones leave it at the end of each period)" : "");
	refused_shown = refused;
}

/* ===================================================================== */
/* Sampling                                                              */
/* ===================================================================== */

/* A CPU-clock perf event on every CPU, each running the BPF program; it keeps the samples
 * of the traced VMs. */
static int attach_cpu_clock(struct sqprof_bpf *skel)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / env.hz,	/* the CPU clock counts ns */
	};

	return sq_attach_perf(skel->progs.cpu_sample, &attr);
}

/* ===================================================================== */
/* Method names                                                          */
/* ===================================================================== */

/* A name as a folded frame: ';' separates frames in the folded format. */
static char *folded(char *name)
{
	for (char *s = name; (s = strchr(s, ';'));)
		*s = ':';
	return name;
}

/* The name of pid's method m as a folded frame (sqnames.h: read from the live process,
 * or the copy the BPF program took if it has exited), into buf. */
static const char *frame_name(struct sqprof_bpf *skel, pid_t pid, __u64 m, char *buf, size_t len)
{
	const char *name = sq_map_method_name(bpf_map__fd(skel->maps.names), bpf_map__fd(skel->maps.vms),
					      pid, m, NULL);

	if (!name)
		snprintf(buf, len, "[unknown 0x%llx]", (unsigned long long)m);
	else
		snprintf(buf, len, "%s", name);
	return folded(buf);
}

/* ===================================================================== */
/* Collecting the profile                                                */
/* ===================================================================== */

/* A growable string: one stack's frames, folded. A target's names make it (up to the
 * kernel's depth of frames of up to a name's length each): past FOLDED_MAX bytes the
 * stack ends in a frame "[truncated]", so that 32,768 stacks stay within 2 GiB at the
 * very worst rather than 4. */
#define FOLDED_MAX 65536
struct buf {
	char *s;
	size_t len, cap;
	bool full;
};

static void buf_add(struct buf *b, const char *s)
{
	static const char cut[] = "[truncated]";
	size_t n = strlen(s);

	if (b->full)
		return;
	if (b->len + n + 1 > FOLDED_MAX - sizeof(cut)) {
		b->full = true;
		s = cut;
		n = sizeof(cut) - 1;
	}
	if (b->len + n + 2 > b->cap) {
		size_t cap = (b->len + n + 2) * 2;
		char *grown = realloc(b->s, cap);
		if (!grown)
			return;
		b->s = grown;
		b->cap = cap;
	}
	if (b->len)
		b->s[b->len++] = ';';
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

static void buf_add_frame(void *b, const char *frame)
{
	buf_add(b, frame);
}

static const char *process_label(const struct sqprof_key *k, char *buf, size_t len);

/* --wall: the two root frames, the green process's name and its state. */
static void wall_frames(const struct sqprof_key *k, struct buf *b)
{
	static const char *const states[] = SQ_GREEN_NAMES;
	char name[64];
	const char *p = process_label(k, name, sizeof(name));

	buf_add(b, p ? folded(name) : "[unknown process]");
	buf_add(b, k->state < sizeof(states) / sizeof(states[0]) ? states[k->state] :
		   k->state == SQPROF_SUSPENDED ? "suspended" : "unknown");
}

/* One stack of the map as a folded line: [pid N] (-P), the process and its state
 * (--wall), [truncated], the methods
 * outermost first (or [VM]), the VM's C frames (-U), the kernel's (-K). */
static void fold(struct sqprof_bpf *skel, const struct sqprof_key *k, struct buf *b)
{
	char tmp[64], name[SQ_FULL_NAME_MAX];

	b->len = 0;
	if (b->s)
		b->s[0] = 0;
	if (env.per_process) {
		snprintf(tmp, sizeof(tmp), "[pid %u]", k->pid);
		buf_add(b, tmp);
	}
	if (env.wall)
		wall_frames(k, b);
	if (k->flags & SQPROF_TRUNCATED)
		buf_add(b, SQP_TRUNCATED);
	if (!k->depth)
		buf_add(b, SQP_NO_FRAME);
	for (int i = k->depth; i-- > 0;)
		buf_add(b, frame_name(skel, k->pid, k->frames[i], name, sizeof(name)));
	if (k->ustack >= 0)
		sqp_native_fold(bpf_map__fd(skel->maps.native), k->ustack, k->pid, false,
				buf_add_frame, b);
	if (k->kstack >= 0)
		sqp_native_fold(bpf_map__fd(skel->maps.native), k->kstack, k->pid, true,
				buf_add_frame, b);
}

/* The green process of a stack: its name, or "process ID" as Process>>name calls one
 * without a name (buf); NULL if the sample could not tell. */
static const char *process_label(const struct sqprof_key *k, char *buf, size_t len)
{
	if (k->process[0]) {
		snprintf(buf, len, "%.*s", (int)sizeof(k->process), k->process);
		return buf;
	}
	if (!k->process_id)
		return NULL;
	snprintf(buf, len, "process %u", k->process_id);
	return buf;
}

/* The keys of the stacks map now, in a growing array (its length in *n). */
static void *stack_keys(int fd, size_t key_size, size_t *n)
{
	char *keys = NULL, *grown;
	size_t cap = 0;

	*n = 0;
	for (;;) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			if (!(grown = realloc(keys, cap * key_size))) {
				free(keys);
				return NULL;
			}
			keys = grown;
		}
		if (bpf_map_get_next_key(fd, *n ? keys + (*n - 1) * key_size : NULL, keys + *n * key_size))
			return keys;
		(*n)++;
	}
}

/* Every stack of the kernel map into the profile, named and labeled, and the kernel's
 * counters into the report's summary. take: each entry is taken out of the map (--every:
 * the next period starts from nothing), and the counters are read and zeroed. */
static int collect(struct sqprof_bpf *skel, struct sqp_profile *p, struct sqp_info *info, bool take)
{
	int fd = bpf_map__fd(skel->maps.stacks);
	size_t ksize = SQPROF_KEY_SIZE(env.max_depth), n;
	char *keys = stack_keys(fd, ksize, &n), label[64];
	struct sqprof_key *k = calloc(1, sizeof(*k));
	struct sqp_trace trace;
	struct sqprof_val val;
	struct buf b = { 0 };
	int err = 0;

	if (!keys || !k) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(k, keys + i * ksize, ksize);
		if ((take ? bpf_map_lookup_and_delete_elem(fd, k, &val) : bpf_map_lookup_elem(fd, k, &val)) != 0)
			continue;
		fold(skel, k, &b);
		trace = (struct sqp_trace){ .trace_hi = k->trace_hi, .trace_lo = k->trace_lo,
					    .parent_span = k->parent_span, .span = k->span };
		if (!b.s || sqp_profile_add_traced(p, b.s, k->pid, process_label(k, label, sizeof(label)), &trace,
						   val.samples, val.weight)) {
			err = -ENOMEM;
			goto out;
		}
	}
#define COUNTER(f) (take ? sq_take(&skel->bss->f) : skel->bss->f)
	info->truncated = COUNTER(truncated);
	info->lost = COUNTER(lost);
	info->lost_weight = COUNTER(lost_weight);
	info->unknown = COUNTER(unknown);
	info->inconsistent = COUNTER(inconsistent);
#undef COUNTER
	info->unresolved = sq_names_unknown();
out:
	free(b.s);
	free(k);
	free(keys);
	return err;
}

/* ===================================================================== */
/* Output                                                                */
/* ===================================================================== */

/* Output files are opened before sampling, so that a path that cannot be written fails
 * at once, not after the profile was taken. */
static FILE *svg_file, *speedscope_file, *pprof_file;
static uint64_t start_wall_ns;

static FILE *open_output(const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");

	if (!f)
		fprintf(stderr, "sqprof: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int open_outputs(void)
{
	int on_stdout = 0;

	on_stdout += env.svg && !strcmp(env.svg, "-");
	on_stdout += env.speedscope && !strcmp(env.speedscope, "-");
	on_stdout += env.pprof && !strcmp(env.pprof, "-");
	if (on_stdout > 1) {
		fprintf(stderr, "sqprof: only one of --svg, --speedscope and --pprof can write to standard output\n");
		return -1;
	}
	if (env.svg && !(svg_file = open_output(env.svg)))
		return -1;
	if (env.speedscope && !(speedscope_file = open_output(env.speedscope)))
		return -1;
	if (env.pprof && !(pprof_file = open_output(env.pprof)))
		return -1;
	return 0;
}

/* Where a frame's method is defined, for the exports: by name, among the names read. */
struct location {
	const char *name, *file;
	uint32_t line;
};

static struct location *locations;
static size_t nlocations, locations_cap;

static int by_location_name(const void *a, const void *b)
{
	return strcmp(((const struct location *)a)->name, ((const struct location *)b)->name);
}

/* sq_names_each: where each method named so far is defined, read while its VM runs. */
static void add_location(void *ctx, pid_t pid, __u64 method, const char *name)
{
	char file[PATH_MAX], text[SQ_FULL_NAME_MAX];
	struct sq_vm *vm = vm_of(pid);
	struct location *l;

	if (nlocations == locations_cap) {
		size_t cap = locations_cap ? 2 * locations_cap : 1024;
		struct location *grown = realloc(locations, cap * sizeof(*grown));
		if (!grown)
			return;
		locations = grown;
		locations_cap = cap;
	}
	snprintf(text, sizeof(text), "%s", name);
	l = &locations[nlocations];
	*l = (struct location){ .name = strdup(folded(text)) };
	if (vm) {
		sq_method_where(vm, method, file, sizeof(file), &l->line);
		l->file = file[0] ? strdup(file) : NULL;
	}
	if (l->name)
		nlocations++;
}

/* Where every method named so far is defined (again: --every names more as it goes). */
static void index_locations(void)
{
	for (size_t i = 0; i < nlocations; i++) {
		free((char *)locations[i].name);
		free((char *)locations[i].file);
	}
	nlocations = 0;
	sq_names_each(add_location, NULL);
	if (nlocations)	/* qsort of NULL, even for 0 elements, is undefined (UBSan) */
		qsort(locations, nlocations, sizeof(*locations), by_location_name);
}

static void location_of(void *ctx, const char *frame, const char **file, uint32_t *line)
{
	struct location key = { .name = frame }, *l;

	*file = NULL;
	*line = 0;
	l = locations ? bsearch(&key, locations, nlocations, sizeof(*locations), by_location_name) : NULL;
	if (l) {
		*file = l->file;
		*line = l->line;
	}
}

static int close_output(FILE *f, const char *path, int err)
{
	if (f != stdout && fclose(f) != 0 && !err)
		err = -errno;
	if (err)
		fprintf(stderr, "sqprof: writing %s: %s\n", path, strerror(-err));
	return err ? -1 : 0;
}

static int write_exports(struct sqp_profile *p, const struct sqp_info *info)
{
	char name[128];
	int ret = 0;

	if (!env.speedscope && !env.pprof)
		return 0;
	index_locations();
	if (info->from_file)
		snprintf(name, sizeof(name), "sqprof, from %s", info->input);
	else if (info->pid)
		snprintf(name, sizeof(name), "sqprof%s, PID %d", info->alloc ? " --alloc" : info->wall ? " --wall" : "",
			 info->pid);
	else
		snprintf(name, sizeof(name), "sqprof%s, %d VMs", info->alloc ? " --alloc" : info->wall ? " --wall" : "",
			 info->nvms);
	if (env.speedscope)
		ret |= close_output(speedscope_file, env.speedscope,
				    sqp_write_speedscope(speedscope_file, p, info, name, location_of, NULL));
	if (env.pprof) {
		struct sqp_pprof o = { .start_ns = start_wall_ns, .loc = location_of, .cmdline = cmdline_of,
				       .binary = nvms == 1 ? vms[0].vm.exe : NULL };
		ret |= close_output(pprof_file, env.pprof, sqp_write_pprof(pprof_file, p, info, &o));
	}
	return ret ? -1 : 0;
}

static int write_svg(struct sqp_profile *p, const struct sqp_info *info)
{
	char title[256], subtitle[256];
	FILE *f;
	int err;

	if (env.title)
		snprintf(title, sizeof(title), "%s", env.title);
	else
		snprintf(title, sizeof(title), "%s", info->alloc ? "Allocation Flame Graph (bytes)"
						     : info->wall ? "Wall-Clock Flame Graph (every green process)"
								 : "CPU Flame Graph");
	if (info->from_file)
		snprintf(subtitle, sizeof(subtitle), "sqprof, from %s", info->input);
	else if (info->alloc)
		snprintf(subtitle, sizeof(subtitle), "sqprof --alloc, %s%d%s, %.2f s, %llu samples",
			 info->pid ? "PID " : "", info->pid ? info->pid : info->nvms,
			 info->pid ? "" : (info->nvms == 1 ? " VM" : " VMs"), info->seconds,
			 (unsigned long long)sqp_total_samples(p));
	else
		snprintf(subtitle, sizeof(subtitle), "sqprof%s, %s%d%s, %ld Hz, %.2f s, %llu samples",
			 info->wall ? " --wall" : "", info->pid ? "PID " : "", info->pid ? info->pid : info->nvms,
			 info->pid ? "" : (info->nvms == 1 ? " VM" : " VMs"), info->hz, info->seconds,
			 (unsigned long long)sqp_total_samples(p));
	f = svg_file;
	err = sqp_write_svg(f, p, title, subtitle, info->alloc);
	if (f != stdout && fclose(f) != 0 && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "sqprof: writing %s: %s\n", env.svg, strerror(-err));
		return -1;
	}
	return 0;
}

static int output(struct sqp_profile *p, struct sqp_info *info)
{
	bool svg_on_stdout = env.svg && strcmp(env.svg, "-") == 0;

	info->top = env.top;
	info->sort_total = env.sort_total;
	if (env.c.timestamp && !env.folded && env.c.format == SQ_FORMAT_TEXT && !svg_on_stdout)
		sq_print_time_header(stdout);
	if (env.folded) {
		sqp_print_folded(stdout, p);
		if (info->wall)
			fprintf(stderr, "sqprof: wall clock, %llu ticks at %ld Hz, %llu missed\n",
				(unsigned long long)info->wall_ticks, info->hz, (unsigned long long)info->wall_missed);
		if (!info->from_file)	/* the table's summary line, where it does not get in the way */
			fprintf(stderr, "sqprof: %llu samples, %llu truncated (--max-depth %u), %llu lost, "
				"%llu inconsistent\n", (unsigned long long)sqp_total_samples(p),
				(unsigned long long)info->truncated, info->max_depth,
				(unsigned long long)info->lost, (unsigned long long)info->inconsistent);
	}
	else if (env.c.format == SQ_FORMAT_JSON)
		sqp_print_json(stdout, p, info);
	else if (!svg_on_stdout)
		sqp_print_table(stdout, p, info);
	if (env.svg && write_svg(p, info))
		return -1;
	return write_exports(p, info);
}

/* -i: a saved profile. */
static int from_file(void)
{
	struct sqp_profile p = { 0 };
	struct sqp_info info = { .from_file = true, .alloc = env.alloc, .input = env.input };
	FILE *f = strcmp(env.input, "-") == 0 ? stdin : fopen(env.input, "r");
	int err;

	if (!f) {
		fprintf(stderr, "sqprof: cannot read %s: %s\n", env.input, strerror(errno));
		return SQ_EXIT_ERROR;
	}
	err = sqp_read_folded(f, env.input, &p);
	if (f != stdin)
		fclose(f);
	if (!err) {
		for (size_t i = 0; i < p.n; i++)
			if (strncmp(p.stacks[i].frames, SQP_TRUNCATED ";",
				    strlen(SQP_TRUNCATED) + 1) == 0)
				info.truncated += p.stacks[i].samples;
		err = output(&p, &info);
	}
	sqp_profile_free(&p);
	return err ? SQ_EXIT_ERROR : 0;
}

/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

static void print_banner(void)
{
	bool table = env.c.format == SQ_FORMAT_TEXT && !env.folded && !(env.svg && !strcmp(env.svg, "-"));
	FILE *f = table ? stdout : stderr;	/* stdout holds only the data otherwise */
	char dur[32] = "";

	if (env.duration_ns) {
		strcpy(dur, " for ");
		sq_format_duration(dur + 5, sizeof(dur) - 5, env.duration_ns);
	}
	fprintf(f, "Sampling %s of ", env.alloc ? "allocations" : env.wall ? "every green process's stack" :
				     "Smalltalk stacks");
	if (env.c.pid)
		fprintf(f, "PID %d", env.c.pid);
	else if (only_ino)
		fprintf(f, "every process running %s (%d now)", env.c.vm, nvms);
	else
		fprintf(f, "every sqvm process (%d now)", nvms);
	if (!env.alloc)
		fprintf(f, " at %ld Hz%s", env.hz, env.wall ? " of wall-clock time" : "");
	if (env.every_ns) {
		char every[32];
		sq_format_duration(every, sizeof(every), env.every_ns);
		fprintf(f, ", a profile every %s into %s", every, env.out);
	}
	fprintf(f, "%s... Hit Ctrl-C to end.\n", dur);
	fflush(f);
}

/* The targets, checked before anything is loaded: the -p VM, or the --vm binary. */
static int check_targets(void)
{
	struct stat st;

	if (env.c.pid) {
		if (add_vm(NULL, env.c.pid, false))
			return -1;
		nvms = 0;	/* added again, into the map, once it is loaded */
	} else if (env.c.vm) {
		if (stat(env.c.vm, &st) != 0) {
			fprintf(stderr, "sqprof: --vm %s: %s\n", env.c.vm, strerror(errno));
			return -1;
		}
		if (!sq_elf_is_sqvm(env.c.vm)) {
			fprintf(stderr, "sqprof: --vm %s is not an sqvm: it has no sqvm_debug_offsets "
				"symbol\n", env.c.vm);
			return -1;
		}
		only_dev = st.st_dev;
		only_ino = st.st_ino;
	}
	if (env.alloc && sq_find_targets(&env.c))	/* the binaries with the USDT probe */
		return -1;
	if (env.c.pid && env.c.pidfd < 0)	/* sq_loop_wait's wake-up when the VM exits */
		env.c.pidfd = (int)syscall(SYS_pidfd_open, env.c.pid, 0);
	return 0;
}

/* Opens the BPF object, sets the options and the stack key's size, and loads it. */
static struct sqprof_bpf *load_bpf(void)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sqprof_bpf *skel;
	int err;

	sq_open_opts(&env.c, &open_opts);
	skel = sqprof_bpf__open_opts(&open_opts);
	if (!skel) {
		fprintf(stderr, "sqprof: cannot open the BPF object: %s\n", strerror(errno));
		return NULL;
	}
	sq_skip_unused_maps(skel->skeleton);
	skel->rodata->max_depth = env.max_depth;
	skel->rodata->kernel_stacks = env.kernel_stacks;
	skel->rodata->user_stacks = env.user_stacks;
	/* pprof's trace labels: only for pprof files, the one output that shows them */
	skel->rodata->trace_labels = env.pprof || env.every_ns;
	err = bpf_map__set_key_size(skel->maps.stacks, SQPROF_KEY_SIZE(env.max_depth));
	if (!err && !env.kernel_stacks && !env.user_stacks)
		err = bpf_map__set_max_entries(skel->maps.native, 1);
	if (!err)	/* one program: the CPU clock's, the allocation probe's or the iterator */
		err = bpf_program__set_autoload(skel->progs.cpu_sample, !env.alloc && !env.wall);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_sample, env.alloc);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.wall_sample, env.wall);
	if (err) {
		fprintf(stderr, "sqprof: cannot configure the BPF object: %s\n", strerror(-err));
		goto fail;
	}
	err = sqprof_bpf__load(skel);
	if (err) {
		fprintf(stderr, "sqprof: cannot load the BPF programs: %s\n", strerror(-err));
		goto fail;
	}
	return skel;
fail:
	sqprof_bpf__destroy(skel);
	return NULL;
}

/* ===================================================================== */
/* Continuous profiles (--every)                                         */
/* ===================================================================== */

static __u64 wall_ns(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return rt.tv_sec * 1000000000ULL + rt.tv_nsec;
}

struct period_file {
	struct sqp_profile *p;
	const struct sqp_info *info;
	const struct sqp_pprof *o;
};

static int write_period_file(FILE *f, void *ctx)
{
	const struct period_file *pf = ctx;

	return sqp_write_pprof(f, pf->p, pf->info, pf->o);
}

/* The comments of a period's files: how it was taken, and what the kernel dropped. */
static void period_comments(const struct sqp_info *all, char text[2][160], struct sqp_pprof *o)
{
	char every[32];

	sq_format_duration(every, sizeof(every), env.every_ns);
	if (env.alloc)
		snprintf(text[0], sizeof(text[0]), "sqprof --alloc --every %s", every);
	else
		snprintf(text[0], sizeof(text[0]), "sqprof%s --every %s, %ld Hz", env.wall ? " --wall" : "", every, env.hz);
	o->comments[0] = text[0];
	if (all->lost || all->inconsistent || all->unknown || all->truncated) {
		snprintf(text[1], sizeof(text[1]), "this period, all VMs: %llu samples lost, %llu inconsistent, "
			 "%llu of VMs not yet known, %llu truncated (--max-depth %u)",
			 (unsigned long long)all->lost, (unsigned long long)all->inconsistent,
			 (unsigned long long)all->unknown, (unsigned long long)all->truncated, all->max_depth);
		o->comments[1] = text[1];
	}
}

/* One VM's file for the period (even without samples: an idle VM says so); a VM that
 * has exited gets its last one, and no more. */
static int write_vm_period(struct prof_vm *v, struct sqp_profile *all, const struct sqp_info *info_all,
			   struct sqp_pprof *o)
{
	struct sqp_profile one = { 0 };
	struct sqp_info info = *info_all;
	struct period_file pf = { &one, &info, o };
	char path[PATH_MAX];
	int err;

	if (v->gone)
		return 0;
	err = sqp_profile_move_pid(all, v->vm.pid, &one);
	info.pid = v->vm.pid;
	info.nvms = 1;
	info.alloc_period = v->alloc_period;
	o->binary = v->vm.exe;
	if (!err)
		err = sqp_dir_write(env.out, v->vm.pid, o->start_ns, write_period_file, &pf, path, sizeof(path));
	if (!err && env.c.verbose)
		fprintf(stderr, "sqprof: wrote %s (%llu samples)\n", path, (unsigned long long)sqp_total_samples(&one));
	if (!err)
		sqp_dir_prune(env.out, v->vm.pid, env.keep);
	if (!sq_proc_alive(v->vm.pid, v->ticks))	/* exited, a zombie, or its PID reused */
		v->gone = true;
	sqp_profile_free(&one);
	return err;
}

/* --every: the period that began at start_wall (CLOCK_REALTIME) and lasted duration_ns
 * ends: its stacks are taken out of the kernel map, one file per VM. */
static int flush_period(struct sqprof_bpf *skel, __u64 start_wall, __u64 duration_ns)
{
	struct sqp_profile all = { 0 };
	struct sqp_info info = { .alloc = env.alloc, .wall = env.wall, .hz = env.hz, .max_depth = env.max_depth,
				 .seconds = duration_ns / 1e9 };
	struct sqp_pprof o = { .start_ns = start_wall, .duration_ns = duration_ns, .loc = location_of,
			       .cmdline = cmdline_of };
	char comments[2][160];
	int err = collect(skel, &all, &info, true);

	if (err)
		fprintf(stderr, "sqprof: reading the profile: %s\n", strerror(-err));
	index_locations();
	period_comments(&info, comments, &o);
	for (int i = 0; i < nvms && !err; i++)
		err = write_vm_period(&vms[i], &all, &info, &o);
	sqp_profile_free(&all);
	forget_gone(skel);
	return err;
}

/* ===================================================================== */
/* Sampling                                                              */
/* ===================================================================== */

/* The wake-ups of the loop's timer: the rescans for new VMs (every VM), else the end of
 * each --every period, else the duration. */
static void set_tick(void)
{
	env.c.duration_ns = env.duration_ns;	/* the loop's own deadline: the end, on time */
	env.c.interval_ns = !env.c.pid ? RESCAN_NS : env.every_ns ? env.every_ns : env.duration_ns;
	if (env.duration_ns && env.duration_ns < env.c.interval_ns)
		env.c.interval_ns = env.duration_ns;
}

/* Samples until the duration ends, Ctrl-C, or the -p VM exits; with every VM, looks
 * for new ones meanwhile; with --every, writes each period's files as it ends. Returns
 * 0, or -1 (reported). */
static int sample(struct sqprof_bpf *skel, struct sq_loop *loop, struct sqp_info *info)
{
	struct sqp_wall wall = SQP_WALL_INIT;
	__u64 start, deadline, period = 0, period_end, now;
	int wake;

	set_tick();
	if (sq_loop_open(loop, &env.c))
		return -1;
	if (env.wall ? sqp_wall_start(&wall, skel->progs.wall_sample, env.hz, env.c.pid, loop)
	    : env.alloc ? sq_attach(&env.c, skel->progs.alloc_sample, "object__alloc__sample")
			: attach_cpu_clock(skel)) {
		sqp_wall_stop(&wall);
		return -1;
	}
	/* The duration counts from now, not from before attaching (which can take a while). */
	if (sq_loop_restart_timer(loop))
		return -1;
	period = start = sq_mono_ns();
	/* Periods begin and end on the timer's grid (start + k * every), not at the wake-ups
	 * that write them: a late wake-up would otherwise push the next end past the next
	 * tick, or start the next period within the second of this one (one file's name). */
	period_end = start + env.every_ns;
	start_wall_ns = wall_ns();
	deadline = env.duration_ns ? start + env.duration_ns : 0;
	if (env.c.verbose)
		fprintf(stderr, "sqprof: sampling %.1f ms after start\n", (start - env.c.start_ns) / 1e6);
	print_banner();
	for (;;) {
		wake = sq_loop_wait(loop);
		if (wake == SQ_WAKE_ERROR) {
			sqp_wall_stop(&wall);
			return -1;
		}
		now = sq_mono_ns();
		if (wake != SQ_WAKE_TICK || (deadline && now + 1000000 >= deadline))
			break;
		if (env.every_ns && now + 1000000 >= period_end) {
			/* A period lasts from one point of the grid to the next (or to the last
			 * one reached, if wake-ups were missed): starts a whole period apart
			 * never share the second that names their files. */
			while (period_end + env.every_ns <= now + 1000000)
				period_end += env.every_ns;
			if (flush_period(skel, start_wall_ns, period_end - period)) {
				sqp_wall_stop(&wall);
				return -1;
			}
			start_wall_ns += period_end - period;
			period = period_end;
			period_end += env.every_ns;
		}
		if (!env.c.pid)
			scan_vms(skel);
	}
	/* Stop sampling before reading: the report is of one moment. */
	sq_detach_all();
	sqp_wall_stop(&wall);
	info->wall = env.wall;
	info->wall_ticks = wall.ticks;
	info->wall_missed = wall.missed;
	if (env.every_ns && flush_period(skel, start_wall_ns, sq_mono_ns() - period))
		return -1;
	info->alloc = env.alloc;
	info->pid = env.c.pid;
	info->nvms = nvms;
	info->hz = env.hz;
	info->seconds = (sq_mono_ns() - start) / 1e9;
	info->max_depth = env.max_depth;
	if (env.c.pid && nvms)
		info->alloc_period = vms[0].alloc_period;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, "[duration]", doc, NULL, NULL, NULL };
	struct sq_loop loop = SQ_LOOP_INIT;
	struct sqprof_bpf *skel = NULL;
	struct sqp_profile profile = { 0 };
	struct sqp_info info = { 0 };
	long test_max;
	int err;

	sq_init(&env.c, "sqprof");
	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return SQ_EXIT_USAGE;
	if (open_outputs())
		return SQ_EXIT_ERROR;
	if (env.input)
		return from_file();
	sq_setup_libbpf(&env.c);
	if (sq_check_privileges() || (env.alloc || env.wall ? sq_check_kernel() : sq_check_perf()))
		return SQ_EXIT_ERROR;
	if (getenv("SQPROF_MAX_VMS") && !sq_parse_long(getenv("SQPROF_MAX_VMS"), 1, SQ_MAX_VMS, &test_max))
		max_vms = test_max;	/* tests only: see max_vms */
	vms = calloc(SQ_MAX_VMS, sizeof(*vms));
	if (!vms || check_targets())
		return SQ_EXIT_ERROR;
	skel = load_bpf();
	if (!skel)
		return SQ_EXIT_ERROR;
	err = env.c.pid ? add_vm(skel, env.c.pid, false) : (scan_vms(skel), 0);
	if (!err && env.every_ns && sqp_dir_check(env.out))
		err = -1;
	if (!err)
		err = sample(skel, &loop, &info);
	if (!err && !env.every_ns) {
		err = collect(skel, &profile, &info, false);
		if (err)
			fprintf(stderr, "sqprof: reading the profile: %s\n", strerror(-err));
	}
	if (!err && !env.every_ns)
		err = output(&profile, &info);

	sq_detach_all();
	sq_loop_close(&loop);
	sqprof_bpf__destroy(skel);
	sqp_profile_free(&profile);
	sqp_native_free();
	sq_names_free();
	return err ? SQ_EXIT_ERROR : 0;
}
