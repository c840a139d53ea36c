// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_switch.c - the VM threads' context switches, from perf's switch records; see
 * sqslow_switch.h. A sched_switch program cost 0.4 us at every context switch of the
 * machine (bpf_stats, examples/http under make load's mix: 114,019 runs in 7 s), most
 * of them not the VM's; these records cost the kernel a few dozen bytes at the VM
 * thread's own switches. */
#define _GNU_SOURCE
#include "sqslow_switch.h"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Data pages of a VM's ring: 64 KiB, about 1,600 switch records, many polls' worth. */
#define DATA_PAGES 16

struct follow {
	__u32 pid;
	int fd;			/* -1: not followed */
	void *ring;
	size_t size;		/* the data area's */
	__u64 round;
};

struct sqslow_switches {
	struct follow *f;
	int n, cap;
	__u64 round, lost, unfollowed;
};

/* A switch record with sample_id_all (TID, TIME): the header, then the sample id. */
struct switch_record {
	struct perf_event_header h;
	__u32 pid, tid;
	__u64 time;
};

struct sqslow_switches *sqslow_switches_new(void)
{
	return calloc(1, sizeof(struct sqslow_switches));
}

static void let_go(struct follow *f)
{
	if (f->ring)
		munmap(f->ring, f->size + (size_t)sysconf(_SC_PAGESIZE));
	if (f->fd >= 0)
		close(f->fd);
	f->ring = NULL;
	f->fd = -1;
}

void sqslow_switches_free(struct sqslow_switches *sw)
{
	if (!sw)
		return;
	for (int i = 0; i < sw->n; i++)
		let_go(&sw->f[i]);
	free(sw->f);
	free(sw);
}

__u64 sqslow_switches_lost(const struct sqslow_switches *sw)
{
	return sw->lost;
}

__u64 sqslow_switches_unfollowed(const struct sqslow_switches *sw)
{
	return sw->unfollowed;
}

/* Switch records of pid's main thread (the one that runs Smalltalk, and the only one
 * the VM starts), in CLOCK_MONOTONIC. */
static void follow(struct sqslow_switches *sw, struct follow *f)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.context_switch = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		.watermark = 1,
		.wakeup_watermark = DATA_PAGES * 4096,	/* read by polls, never woken */
	};

	f->fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)f->pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (f->fd < 0) {
		sw->unfollowed++;
		return;
	}
	f->size = (size_t)DATA_PAGES * page;
	f->ring = mmap(NULL, f->size + page, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->ring == MAP_FAILED) {
		f->ring = NULL;
		let_go(f);
		sw->unfollowed++;
	}
}

/* len bytes of f's data area from position pos, into out: a record may wrap round its end. */
static void copy_out(const struct follow *f, const unsigned char *data, __u64 pos, void *out, size_t len)
{
	size_t at = pos % f->size, first = f->size - at < len ? f->size - at : len;

	memcpy(out, data + at, first);
	memcpy((unsigned char *)out + first, data, len - first);
}

static void drain(struct sqslow_switches *sw, struct follow *f, sqslow_cpu_fn cpu, void *ctx)
{
	struct perf_event_mmap_page *meta = f->ring;
	const unsigned char *data = (const unsigned char *)f->ring + meta->data_offset;
	__u64 head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE), tail = meta->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		struct switch_record r;
		struct { struct perf_event_header h; __u64 id, lost; } l;

		copy_out(f, data, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail)
			break;	/* never the kernel's: stop here rather than read past */
		if (h.type == PERF_RECORD_SWITCH && h.size >= sizeof(r)) {
			copy_out(f, data, tail, &r, sizeof(r));
			if (r.tid == f->pid)
				cpu(ctx, f->pid, r.time, !(h.misc & PERF_RECORD_MISC_SWITCH_OUT));
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(l)) {
			copy_out(f, data, tail, &l, sizeof(l));
			sw->lost += l.lost;
		}
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

void sqslow_switches_poll(struct sqslow_switches *sw, const __u32 *pids, int n, sqslow_cpu_fn cpu, void *ctx)
{
	sw->round++;
	for (int i = 0; i < n; i++) {
		int k;
		for (k = 0; k < sw->n && sw->f[k].pid != pids[i]; k++)
			;
		if (k == sw->n) {
			if (sw->n == sw->cap) {
				int cap = sw->cap ? 2 * sw->cap : 8;
				struct follow *more = realloc(sw->f, cap * sizeof(*more));
				if (!more)
					continue;
				sw->f = more;
				sw->cap = cap;
			}
			sw->f[sw->n] = (struct follow){ .pid = pids[i], .fd = -1 };
			follow(sw, &sw->f[sw->n++]);
		}
		sw->f[k].round = sw->round;
	}
	for (int i = 0; i < sw->n;) {
		if (sw->f[i].round != sw->round) {	/* gone: what its ring still holds, then let go */
			if (sw->f[i].ring)
				drain(sw, &sw->f[i], cpu, ctx);
			let_go(&sw->f[i]);
			sw->f[i] = sw->f[--sw->n];
			continue;
		}
		if (sw->f[i].ring)
			drain(sw, &sw->f[i], cpu, ctx);
		i++;
	}
}
