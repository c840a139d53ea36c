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

#endif
