// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqio.h - what sqio's BPF program and user space share. */
#ifndef SQIO_H
#define SQIO_H

#include "sqcommon.h"

#define SQIO_MAX_ROWS 16384
/* Frames kept per row, innermost first: user space shows the first one outside the
 * I/O classes of the library (IOHandle, File, Socket, ServerSocket). */
#define SQIO_FRAMES 6

enum sqio_op { SQIO_READ, SQIO_WRITE, SQIO_ACCEPT, SQIO_CONNECT, SQIO_OPEN, SQIO_CLOSE, SQIO_NOPS };
#define SQIO_OP_NAMES { "read", "write", "accept", "connect", "open", "close" }

enum sqio_kind { SQIO_FILE, SQIO_TCP, SQIO_OTHER, SQIO_NKINDS };
#define SQIO_KIND_NAMES { "file", "tcp", "other" }

struct sqio_key {
	__u32 pid;
	__u8 op;		/* enum sqio_op */
	__u8 kind;		/* enum sqio_kind */
	__u16 pad;
	__u64 frames[SQIO_FRAMES];	/* Method *, innermost first; 0 past the bottom */
};

struct sqio_stats {
	__u64 calls;		/* system calls */
	__u64 errors;		/* ... that failed (EAGAIN included: the process then waits) */
	__u64 bytes;		/* read or written */
	__u64 total_ns, max_ns;	/* in the system calls */
	__u64 waits;		/* waits in the event loop (io__wait to io__ready) */
	__u64 wait_ns, wait_max_ns;
	__u64 disk_pages;	/* pages its reads brought into the page cache (misses) */
	__u64 slots[SQ_MAX_SLOTS];	/* -L: log2 of a call's latency in us */
};

/* Adds from's counts into to's, and keeps the larger maxima: the BPF program's batch rows
 * into its map, user space's rows of one method into one line. */
SQ_INLINE void sqio_merge(struct sqio_stats *to, const struct sqio_stats *from)
{
	to->calls += from->calls;
	to->errors += from->errors;
	to->bytes += from->bytes;
	to->total_ns += from->total_ns;
	to->waits += from->waits;
	to->wait_ns += from->wait_ns;
	to->disk_pages += from->disk_pages;
	if (from->max_ns > to->max_ns)
		to->max_ns = from->max_ns;
	if (from->wait_max_ns > to->wait_max_ns)
		to->wait_max_ns = from->wait_max_ns;
	for (int i = 0; i < SQ_MAX_SLOTS; i++)
		to->slots[i] += from->slots[i];
}

#endif
