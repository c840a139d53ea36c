// SPDX-License-Identifier: BSD-2-Clause
/* sqpb.h - a small protocol-buffer encoder (the wire format only: varints, fixed64,
 * length-delimited fields and nested messages), for the tools that write a protobuf
 * format (sqflow --format=perfetto). A message is built in one growing buffer: a nested
 * message's length is reserved as one byte where it opens and patched where it closes
 * (the body moved up when the length needs more bytes), so lengths are always minimal
 * varints. The caller writes the buffer out and resets it between messages: memory is
 * bounded by the largest one, and past SQPB_MAX_BYTES the buffer stops growing and
 * says so (failed), instead of taking all memory. */
#ifndef SQPB_H
#define SQPB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQPB_MAX_BYTES (64u << 20)
#define SQPB_MAX_DEPTH 16		/* messages open at once */

/* A zeroed struct is an empty buffer. */
struct sqpb {
	unsigned char *data;
	size_t len, cap;
	size_t open[SQPB_MAX_DEPTH];	/* where each open message's length byte is */
	unsigned depth;
	bool failed;			/* out of memory, too large or too deep: data is not valid */
};

/* Field field as a varint (int32, int64, uint32, uint64, bool, enum). */
void sqpb_varint(struct sqpb *b, unsigned field, uint64_t v);

/* Field field as a fixed64 (fixed64, sfixed64, double's bits). */
void sqpb_fixed64(struct sqpb *b, unsigned field, uint64_t v);

/* Field field as length-delimited bytes (bytes, string: len bytes at p). */
void sqpb_bytes(struct sqpb *b, unsigned field, const void *p, size_t len);

/* A string field: s up to its NUL. */
void sqpb_string(struct sqpb *b, unsigned field, const char *s);

/* Opens a nested message in field field; what follows up to sqpb_close is its body. */
void sqpb_open(struct sqpb *b, unsigned field);

/* Closes the innermost open message, writing its length. */
void sqpb_close(struct sqpb *b);

/* Empties the buffer (keeping its memory) for the next message. */
void sqpb_reset(struct sqpb *b);

/* Frees the buffer, and leaves it empty. */
void sqpb_free(struct sqpb *b);

#endif
