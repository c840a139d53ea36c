// SPDX-License-Identifier: BSD-2-Clause
/* sqtool.h - the user-space half every sqvm tool shares: common options, finding the VM
 * binaries to attach to, USDT attachment, the event loop, and output (time stamps, log2
 * histograms, JSON). Functions print their own error messages, prefixed by the tool name,
 * and return a negative value; the tool then cleans up and exits 1. */
#ifndef SQTOOL_H
#define SQTOOL_H

#include <argp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#define SQTOOLS_VERSION "0.1.0"
#define SQ_PROVIDER "squeak"
#define SQ_MAX_BINARIES 16
#define SQ_MAX_PROBES 64

/* Exit statuses: 0 done, 1 an error while tracing or setting up, 2 a bad command line. */
#define SQ_EXIT_ERROR 1
#define SQ_EXIT_USAGE 2

enum sq_format {
	SQ_FORMAT_TEXT,
	SQ_FORMAT_JSON,		/* JSON lines */
	SQ_FORMAT_CHROME,	/* Chrome trace-event JSON (sqflow) */
};

/* The squeak probes found in one binary: name and number of sites of each. */
struct sq_probes {
	int nprobes;
	int nsites;
	struct {
		char name[64];
		int sites;
	} probe[SQ_MAX_PROBES];
};

/* A binary to attach to: the path libbpf opens (through /proc/PID/root for a process in a
 * container), the path to show, and its identity (uprobes attach to the inode). */
struct sq_binary {
	char path[PATH_MAX];
	char shown[PATH_MAX];
	dev_t dev;
	ino_t ino;
	struct sq_probes probes;
};

/* The options every tool has, and what sq_find_targets found from them. */
struct sq_common {
	const char *tool;		/* program name, for messages */
	pid_t pid;			/* -p; 0: every process running the VM binary */
	const char *vm;			/* --vm */
	bool verbose;			/* -v */
	bool timestamp;			/* -T */
	enum sq_format format;		/* -j, --format */
	__u64 interval_ns;		/* [interval]: 0 means one report at the end */
	__u64 duration_ns;		/* -d: trace this long, then report and exit; 0: no limit */
	long count;			/* [count]: reports before exiting; 0 means no limit */
	int npositional;
	__u64 start_ns;			/* CLOCK_MONOTONIC when main() began */

	int nbins;			/* filled by sq_find_targets */
	struct sq_binary bins[SQ_MAX_BINARIES];
	int pidfd;			/* -p: readable once the process has exited; else -1 */
	bool targets_optional;		/* no VM binary found is no error (sqstat: VMs may come) */
};

/* Options of every tool, to put first in the tool's argp option table. */
#define SQ_OPT_VM 0x1001
#define SQ_OPT_FORMAT 0x1002
#define SQ_OPT_VERSION 0x1003
#define SQ_COMMON_OPTIONS \
	{ "pid", 'p', "PID", 0, "Trace this process only (default: every process running the VM)", 0 }, \
	{ "vm", SQ_OPT_VM, "PATH", 0, "The sqvm binary to trace system-wide (default: sqvm on PATH)", 0 }, \
	{ "timestamp", 'T', NULL, 0, "Include timestamps on output", 0 }, \
	{ "json", 'j', NULL, 0, "Machine-readable output: one JSON object per line", 0 }, \
	{ "verbose", 'v', NULL, 0, "Verbose: libbpf debug output and start-up timing", 0 }, \
	{ "duration", 'd', "DURATION", 0, "Trace this long (seconds, or 500ms, 2m...), then report and exit", 0 }, \
	{ "help", 'h', NULL, 0, "Show this help", 0 }, \
	{ "version", SQ_OPT_VERSION, NULL, 0, "Show the version", 0 }

/* Start-up: the program name, the start time and argp's conventions. */
void sq_init(struct sq_common *c, const char *tool);

/* Handles a common option or positional argument; ARGP_ERR_UNKNOWN for the tool's own. */
int sq_parse_common_opt(int key, char *arg, struct argp_state *state, struct sq_common *c);

/* "250ms", "2s", "1.5us", "100ns"; a bare number is in units of unit_ns. */
int sq_parse_duration(const char *s, __u64 unit_ns, __u64 *ns);
int sq_parse_long(const char *s, long min, long max, long *out);

/* Environment checks, before anything is loaded: privileges, then BPF and uprobes. */
int sq_check_privileges(const struct sq_common *c);
int sq_check_kernel(const struct sq_common *c);

/* libbpf's messages: debug ones only with -v. */
void sq_setup_libbpf(const struct sq_common *c);

/* Open options for a skeleton: on the kernel the tools were built on, CO-RE relocates
 * against the built-in subset of its BTF instead of parsing all of it (see tools.mk). */
struct bpf_object_open_opts;
void sq_open_opts(const struct sq_common *c, struct bpf_object_open_opts *opts);

/* The binaries to attach to: /proc/PID/exe's file with -p; the --vm file (that file only);
 * else the sqvm on PATH (or beside the tool's build folder) and the sqvm binaries of
 * processes running in other root file systems (containers). Each must carry squeak
 * probes. */
int sq_find_targets(struct sq_common *c);

/* Adds one more binary (if it carries squeak probes and is not there already): a VM
 * found running. 0, or a negative errno. */
int sq_add_target(struct sq_common *c, const char *path, const char *shown);

/* What every USDT tool does between parsing its arguments and opening its skeleton:
 * libbpf set-up, the privilege and kernel checks, finding the VMs, the open options.
 * Answers 0, or SQ_EXIT_ERROR after printing why. */
int sq_prepare(struct sq_common *c, struct bpf_object_open_opts *opts);

/* Reads the squeak USDT notes of an ELF file; 0, or -errno (not readable, not ELF). */
int sq_read_probes(const char *path, struct sq_probes *out);

/* Attaches prog to every site of squeak:probe in every target binary. */
struct bpf_program;
int sq_attach(struct sq_common *c, struct bpf_program *prog, const char *probe);
int sq_attached_sites(void);
void sq_detach_all(void);

/* A snapshot of the keys of a BPF hash map (at most max, key_size bytes each), so that
 * the entries can be taken out one by one while the kernel goes on adding to it. Answers
 * a calloc'ed array (free it) with its length in *n, or NULL if out of memory. */
void *sq_map_keys(int fd, size_t key_size, size_t max, size_t *n);

/* Fills a BPF map of struct sq_vm_offsets, keyed by PID, with the stack-walk offsets of
 * the VMs running now: the -p one, or every process of the target binaries (VMs that
 * start later hand theirs over at squeak:vm__start). With -p and why, a VM that cannot be
 * read is reported: "TOOL: PID N: REASON: WHY". */
void sq_add_running_vm_offsets(const struct sq_common *c, int map_fd, const char *why);

/* "Tracing WHAT of PID 42... Hit Ctrl-C to end." (on stderr unless the output is text),
 * and with -v the start-up time. */
void sq_print_tracing(const struct sq_common *c, const char *what);

/* The event loop: waits for the interval timer, SIGINT/SIGTERM, the traced process's
 * exit, and (consuming them as they come) ring buffer records. */
enum sq_wake {
	SQ_WAKE_ERROR = -1,
	SQ_WAKE_TICK = 1,	/* an interval ended */
	SQ_WAKE_STOP,		/* SIGINT or SIGTERM */
	SQ_WAKE_EXITED,		/* the -p process exited (its ring buffer records consumed) */
	SQ_WAKE_DEADLINE,	/* -d: the duration is over */
};

struct ring_buffer;
struct sq_loop {
	int epfd, sigfd, timerfd;
	int deadlinefd;		/* -d: one-shot timer, or -1 */
	const struct sq_common *c;
	struct ring_buffer *rb;
};

int sq_loop_open(struct sq_loop *l, const struct sq_common *c);
int sq_loop_add_ringbuf(struct sq_loop *l, struct ring_buffer *rb);
/* What a ring buffer callback answers after handling a record: 0, or now and then
 * -EINTR, to let the loop look at its other events between batches. */
int sq_rb_yield(void);
/* Starts the interval (and the -d duration) over from now: the loop is opened before
 * attaching (so that Ctrl-C is caught from the start), and attaching can take a while. */
int sq_loop_restart_timer(struct sq_loop *l);
int sq_loop_wait(struct sq_loop *l);
void sq_loop_close(struct sq_loop *l);

/* Time. Event times are CLOCK_MONOTONIC (bpf_ktime_get_ns); these show them as wall time. */
__u64 sq_mono_ns(void);
void sq_format_time(char *buf, size_t len, __u64 mono_ns, bool micros);
void sq_print_time_header(const struct sq_common *c, FILE *f);
/* The same instant for JSON: RFC 3339 local time with its offset,
 * "2026-12-01T11:05:02.123456+00:00". */
void sq_format_iso_time(char *buf, size_t len, __u64 mono_ns);

/* A duration as the user would write it: "2 s", "500 ms", "1.5 us", "100 ns". */
void sq_format_duration(char *buf, size_t len, __u64 ns);

/* The "low -> high : count |****|" histogram, and its JSON form (nonzero range only). */
void sq_print_log2_hist(FILE *f, const __u64 *slots, int nslots, const char *unit);
void sq_json_log2_hist(FILE *f, const __u64 *slots, int nslots);

/* A JSON string literal for s, escaped. */
void sq_json_str(FILE *f, const char *s);

/* Atomically read and zero a counter shared with a BPF program (mmap'ed .bss). */
static inline __u64 sq_take(__u64 *p)
{
	return __atomic_exchange_n(p, 0, __ATOMIC_RELAXED);
}

#endif
