// SPDX-License-Identifier: BSD-2-Clause
/* sqstack - prints the Smalltalk stack of a running sqvm, read from outside the process
 * through the sqvm_debug_offsets structure (like jstack, or py-spy dump).
 *
 * By default the VM's threads are stopped for the read (ptrace, tens of microseconds), as
 * py-spy dump does, so the stack stands still; --nonblocking reads it while it runs and
 * believes a read only when a second one agrees. Either way every frame is checked
 * against the VM's invariants (below), and a stack that cannot be read
 * consistently is reported as such, never printed as garbage. */
#define _GNU_SOURCE
#include <argp.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqmem.h"
#include "sqopts.h"
#include "sqoutput.h"
#include "sqstack_walk.h"

/* The threads of a VM stopped for a read. */
struct paused {
	pid_t tids[256];
	int n;
};

static void resume_vm(struct paused *p)
{
	while (p->n > 0)
		ptrace(PTRACE_DETACH, p->tids[--p->n], 0, 0);
}

/* A thread that does not stop within this after PTRACE_INTERRUPT (one in an
 * uninterruptible sleep, e.g. on a FUSE file system that does not answer) is not waited
 * for: the VM is released and the read fails, rather than the tool hanging. */
#define PAUSE_TIMEOUT_MS 1000

/* Waits for tid's stop after PTRACE_INTERRUPT, at most PAUSE_TIMEOUT_MS: 0, -ETIMEDOUT,
 * or -errno. */
static int wait_stop(pid_t tid, int *status)
{
	uint64_t deadline = sq_mono_ns() + PAUSE_TIMEOUT_MS * 1000000ULL;
	struct timespec tick = { 0, 1000000 };

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (sq_mono_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&tick, NULL);
	}
}

/* Stops every thread of pid (ptrace: PTRACE_SEIZE, then PTRACE_INTERRUPT), so that a
 * stack read sees it standing still, as py-spy dump and jstack do; resume_vm lets them
 * go. A tracer that dies meanwhile releases them too (the kernel detaches). Answers 0 or
 * -errno (EPERM: another tracer, or ptrace is not allowed; ETIMEDOUT: a thread did not
 * stop within PAUSE_TIMEOUT_MS, and every thread was let go). */
static int pause_vm(pid_t pid, struct paused *p)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int err = 0;

	p->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((de = readdir(dir)) && p->n < (int)(sizeof(p->tids) / sizeof(p->tids[0]))) {
		pid_t tid;
		int status;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = atoi(de->d_name);
		if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
			if (errno == ESRCH)	/* the thread ended meanwhile */
				continue;
			err = -errno;
			break;
		}
		p->tids[p->n++] = tid;
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
			err = -errno;
			break;
		}
		if ((err = wait_stop(tid, &status)))
			break;
	}
	closedir(dir);
	if (err)
		resume_vm(p);
	return err;
}

/* ===================================================================== */
/* The tool                                                              */
/* ===================================================================== */

#define OPT_NONBLOCKING 0x2001
#define TRIES 20

static struct {
	struct sq_common c;
	long max_frames;
	bool nonblocking;
} env;

const char *argp_program_version = "sqstack (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Print the Smalltalk stack of a running sqvm process, innermost frame first.\n"
"\n"
"USAGE: sqstack [-h] -p PID [-n FRAMES] [--nonblocking] [-T] [-j] [-v]\n"
"               [interval [count]]\n"
"\n"
"The VM is stopped while its stack is read (ptrace), unless --nonblocking.\n"
"\n"
"EXAMPLES:\n"
"    sqstack -p 1234              # the running green process's stack\n"
"    sqstack -p 1234 -n 10        # at most 10 frames\n"
"    sqstack -p 1234 -T 1 5       # five times, a second apart, with times\n"
"    sqstack -p 1234 --nonblocking -j   # without stopping the VM, as JSON\n";

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "The sqvm process (required)", 0 },
	{ "timestamp", 'T', NULL, 0, "Print the time before each stack", 0 },
	{ "json", 'j', NULL, 0, "One JSON object per stack", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose: say how the stack was read", 0 },
	{ "frames", 'n', "FRAMES", 0, "At most FRAMES frames (default 1000)", 0 },
	{ "nonblocking", OPT_NONBLOCKING, NULL, 0,
	  "Do not stop the VM: read while it runs (a busy VM may need several tries)", 0 },
	{ "help", 'h', NULL, 0, "Show this help", 0 },
	{ "version", SQ_OPT_VERSION, NULL, 0, "Show the version", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'n':
		if (sq_parse_long(arg, 1, 1000000, &env.max_frames))
			argp_error(state, "invalid frame count '%s'", arg);
		return 0;
	case OPT_NONBLOCKING:
		env.nonblocking = true;
		return 0;
	case ARGP_KEY_END:
		if (!env.c.pid)
			argp_error(state, "which process? give -p PID");
		return 0;
	default:
		return sq_parse_common_opt(key, arg, state, &env.c);
	}
}

static void print_stack(const struct frame *frames, int n, bool truncated)
{
	char when[64];

	if (env.c.format == SQ_FORMAT_JSON) {
		sq_format_iso_time(when, sizeof(when), sq_mono_ns());
		printf("{\"time\":\"%s\",\"pid\":%d,\"frames\":[", when, env.c.pid);
		for (int i = 0; i < n; i++) {
			printf("%s{\"name\":", i ? "," : "");
			sq_json_str(stdout, frames[i].name);
			printf(",\"file\":");
			sq_json_str(stdout, frames[i].file);
			printf(",\"line\":%u,\"block\":%s}", frames[i].line, frames[i].block ? "true" : "false");
		}
		printf("],\"truncated\":%s}\n", truncated ? "true" : "false");
	} else {
		if (env.c.timestamp) {
			sq_format_time(when, sizeof(when), sq_mono_ns(), false);
			printf("%s\n", when);
		}
		for (int i = 0; i < n; i++)
			printf("    at %s (%s:%u)\n", sq_printable(frames[i].name), sq_printable(frames[i].file),
			       frames[i].line);
		if (truncated)
			printf("    ... (more frames: -n)\n");
	}
	fflush(stdout);
}

/* One stack: 0, or SQ_EXIT_ERROR after saying why. */
static int dump(const struct sq_vm *vm, struct frame *frames)
{
	struct paused paused = { .n = 0 };
	char why[160];
	bool truncated = false, stopped = false;
	int n = 0, err;

	if (!env.nonblocking) {
		err = pause_vm(vm->pid, &paused);
		stopped = err == 0;
		if (err == -ETIMEDOUT) {
			fprintf(stderr, "sqstack: PID %d: a thread did not stop within %d ms (blocked in the "
				"kernel?): released it, no stack read; try --nonblocking\n", vm->pid,
				PAUSE_TIMEOUT_MS);
			return SQ_EXIT_ERROR;
		}
		if (err && env.c.verbose)
			fprintf(stderr, "sqstack: cannot stop PID %d (%s): reading it while it runs\n",
				vm->pid, strerror(-err));
	}
	err = sq_read_stack(vm, frames, (int)env.max_frames, &n, &truncated, stopped ? 1 : TRIES,
			    why, sizeof(why));
	if (stopped)
		resume_vm(&paused);
	if (env.c.verbose)
		fprintf(stderr, "sqstack: read %d frames %s\n", n,
			stopped ? "with the VM stopped" : "while it ran");
	switch (err) {
	case STACK_OK:
		print_stack(frames, n, truncated);
		return 0;
	case STACK_NONE:
		fprintf(stderr, "sqstack: PID %d has no running Smalltalk process (starting or exiting)\n",
			vm->pid);
		return SQ_EXIT_ERROR;
	case STACK_GONE:
		fprintf(stderr, "sqstack: PID %d exited\n", vm->pid);
		return SQ_EXIT_ERROR;
	default:
		fprintf(stderr, "sqstack: PID %d: no consistent stack: %s%s\n", vm->pid, why,
			stopped ? "" : "; try again, or without --nonblocking");
		return SQ_EXIT_ERROR;
	}
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc };
	struct frame *frames;
	struct sq_vm vm;
	int err, ret = 0;

	sq_init(&env.c, "sqstack");
	env.max_frames = 1000;
	err = argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL);
	if (err)
		return SQ_EXIT_USAGE;
	err = sq_vm_open(env.c.pid, &vm, 500);
	if (err == SQ_VM_GONE) {
		fprintf(stderr, "sqstack: PID %d does not exist\n", env.c.pid);
		return SQ_EXIT_ERROR;
	}
	if (err) {
		fprintf(stderr, "sqstack: PID %d%s%s%s: %s\n", env.c.pid, vm.exe[0] ? " (" : "", sq_printable(vm.exe),
			vm.exe[0] ? ")" : "", sq_vm_strerror(err));
		return SQ_EXIT_ERROR;
	}
	frames = calloc((size_t)env.max_frames, sizeof(*frames));
	if (!frames) {
		fprintf(stderr, "sqstack: out of memory\n");
		return SQ_EXIT_ERROR;
	}
	for (long i = 0; ret == 0; i++) {
		ret = dump(&vm, frames);
		if (!env.c.interval_ns || (env.c.count && i + 1 >= env.c.count))
			break;
		struct timespec ts = { (time_t)(env.c.interval_ns / 1000000000ULL),
				       (long)(env.c.interval_ns % 1000000000ULL) };
		nanosleep(&ts, NULL);
		if (env.c.format == SQ_FORMAT_TEXT)
			printf("\n");
	}
	free(frames);
	return ret;
}
