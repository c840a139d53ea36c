// SPDX-License-Identifier: BSD-2-Clause
/* sqpb.c - the protocol-buffer wire format, encoded into a growing buffer (sqpb.h). */
#include <stdlib.h>
#include <string.h>

#include "sqpb.h"

enum wire { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

/* Room for n more bytes; false (and failed) when there is none to be had. */
static bool room(struct sqpb *b, size_t n)
{
	size_t cap;
	unsigned char *grown;

	if (b->failed)
		return false;
	if (n > SQPB_MAX_BYTES - b->len) {
		b->failed = true;
		return false;
	}
	if (b->len + n <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	grown = realloc(b->data, cap);
	if (!grown) {
		b->failed = true;
		return false;
	}
	b->data = grown;
	b->cap = cap;
	return true;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80)
		v >>= 7, n++;
	return n;
}

/* v as a varint at p (varint_len(v) bytes). */
static void put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p = (unsigned char)v;
}

static void raw_varint(struct sqpb *b, uint64_t v)
{
	if (!room(b, varint_len(v)))
		return;
	put_varint(b->data + b->len, v);
	b->len += varint_len(v);
}

static void tag(struct sqpb *b, unsigned field, enum wire wire)
{
	raw_varint(b, (uint64_t)field << 3 | wire);
}

void sqpb_varint(struct sqpb *b, unsigned field, uint64_t v)
{
	tag(b, field, WIRE_VARINT);
	raw_varint(b, v);
}

void sqpb_fixed64(struct sqpb *b, unsigned field, uint64_t v)
{
	tag(b, field, WIRE_FIXED64);
	if (!room(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->data[b->len++] = (unsigned char)(v >> (8 * i));
}

void sqpb_bytes(struct sqpb *b, unsigned field, const void *p, size_t len)
{
	tag(b, field, WIRE_LEN);
	raw_varint(b, len);
	if (!room(b, len))
		return;
	memcpy(b->data + b->len, p, len);
	b->len += len;
}

void sqpb_string(struct sqpb *b, unsigned field, const char *s)
{
	sqpb_bytes(b, field, s, strlen(s));
}

void sqpb_open(struct sqpb *b, unsigned field)
{
	if (b->depth == SQPB_MAX_DEPTH)
		b->failed = true;
	tag(b, field, WIRE_LEN);
	if (!room(b, 1))
		return;
	b->open[b->depth++] = b->len;
	b->data[b->len++] = 0;		/* the length, patched by sqpb_close */
}

void sqpb_close(struct sqpb *b)
{
	size_t at, body, extra;

	if (b->failed || !b->depth) {
		b->failed = true;
		return;
	}
	at = b->open[--b->depth];
	body = b->len - at - 1;
	extra = varint_len(body) - 1;
	if (extra) {
		if (!room(b, extra))
			return;
		memmove(b->data + at + 1 + extra, b->data + at + 1, body);
		b->len += extra;
	}
	put_varint(b->data + at, body);
}

void sqpb_reset(struct sqpb *b)
{
	b->len = 0;
	b->depth = 0;
	b->failed = false;
}

void sqpb_free(struct sqpb *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
