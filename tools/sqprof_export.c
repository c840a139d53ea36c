// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_export.c - speedscope and pprof files of a profile; see sqprof_export.h. */
#define _GNU_SOURCE
#include "sqprof_export.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sqintern.h"
#include "sqoutput.h"

/* ===================================================================== */
/* Frames: the distinct frame names of a profile (sqintern.h), and each stack as indices */
/* ===================================================================== */

/* Stack s's frame indices, outermost first, into out (*n of them); -ENOMEM. */
static int stack_indices(struct sq_intern *fr, const char *s, size_t **out, size_t *n, size_t *cap)
{
	*n = 0;
	while (*s) {
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s), k;
		if ((k = sq_intern(fr, s, len)) == (size_t)-1)
			return -ENOMEM;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			size_t *g = realloc(*out, c * sizeof(*g));
			if (!g)
				return -ENOMEM;
			*out = g;
			*cap = c;
		}
		(*out)[(*n)++] = k;
		s += len + (end ? 1 : 0);
	}
	return 0;
}

static uint64_t period_ns(const struct sqp_info *info)
{
	return info->hz > 0 ? 1000000000ULL / (uint64_t)info->hz : 0;
}

/* What a stack weighs: bytes (alloc), nanoseconds of CPU, or samples from a file. */
static uint64_t weight_of(const struct sqp_stack *st, const struct sqp_info *info)
{
	if (info->alloc || info->from_file)
		return st->weight;
	return st->samples * period_ns(info);
}

/* ===================================================================== */
/* speedscope                                                            */
/* ===================================================================== */

int sqp_write_speedscope(FILE *f, struct sqp_profile *p, const struct sqp_info *info, const char *name,
			 sqp_location_fn loc, void *ctx)
{
	struct sq_intern fr = { 0 };
	size_t *idx = NULL, n, cap = 0;
	uint64_t total = 0;
	int err = 0;

	sqp_profile_merge(p);
	/* frames first: the file lists them before the samples */
	for (size_t i = 0; i < p->n && !err; i++)
		err = stack_indices(&fr, p->stacks[i].frames, &idx, &n, &cap);
	if (err)
		goto out;
	fprintf(f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"sqprof %s\",\"name\":",
		SQTOOLS_VERSION);
	sq_json_str(f, name);
	fprintf(f, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (size_t i = 0; i < fr.n; i++) {
		const char *file = NULL;
		uint32_t line = 0;
		if (loc)
			loc(ctx, fr.names[i], &file, &line);
		fprintf(f, "%s{\"name\":", i ? "," : "");
		sq_json_str(f, fr.names[i]);
		if (file) {
			fprintf(f, ",\"file\":");
			sq_json_str(f, file);
		}
		if (line)
			fprintf(f, ",\"line\":%u", line);
		fprintf(f, "}");
	}
	for (size_t i = 0; i < p->n; i++)
		total += weight_of(&p->stacks[i], info);
	fprintf(f, "]},\"profiles\":[{\"type\":\"sampled\",\"name\":");
	sq_json_str(f, name);
	fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		info->alloc ? "bytes" : info->from_file ? "none" : "nanoseconds", (unsigned long long)total);
	for (size_t i = 0; i < p->n && !err; i++) {
		err = stack_indices(&fr, p->stacks[i].frames, &idx, &n, &cap);
		fprintf(f, "%s[", i ? "," : "");
		for (size_t k = 0; k < n; k++)
			fprintf(f, "%s%zu", k ? "," : "", idx[k]);
		fprintf(f, "]");
	}
	fprintf(f, "],\"weights\":[");
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)weight_of(&p->stacks[i], info));
	fprintf(f, "]}]}\n");
	if (ferror(f))
		err = -EIO;
out:
	free(idx);
	sq_intern_free(&fr);
	return err;
}

/* ===================================================================== */
/* pprof: a small protobuf encoder                                       */
/* ===================================================================== */

/* A growable byte buffer; a failed allocation sets oom and makes later writes no-ops. */
struct pb {
	unsigned char *b;
	size_t n, cap;
	bool oom;
};

static void pb_bytes(struct pb *pb, const void *p, size_t len)
{
	if (pb->oom)
		return;
	if (pb->n + len > pb->cap) {
		size_t cap = pb->cap ? pb->cap : 4096;
		while (cap < pb->n + len)
			cap *= 2;
		unsigned char *g = realloc(pb->b, cap);
		if (!g) {
			pb->oom = true;
			return;
		}
		pb->b = g;
		pb->cap = cap;
	}
	memcpy(pb->b + pb->n, p, len);
	pb->n += len;
}

static void pb_varint(struct pb *pb, uint64_t v)
{
	unsigned char buf[10];
	int n = 0;

	do {
		buf[n] = v & 0x7f;
		v >>= 7;
		if (v)
			buf[n] |= 0x80;
		n++;
	} while (v);
	pb_bytes(pb, buf, n);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void pb_key(struct pb *pb, int field, int wire)
{
	pb_varint(pb, ((uint64_t)field << 3) | wire);
}

/* A varint field; zero is the default and is left out, as encoders do. */
static void pb_uint(struct pb *pb, int field, uint64_t v)
{
	if (!v)
		return;
	pb_key(pb, field, WIRE_VARINT);
	pb_varint(pb, v);
}

static void pb_len(struct pb *pb, int field, const void *p, size_t len)
{
	pb_key(pb, field, WIRE_LEN);
	pb_varint(pb, len);
	pb_bytes(pb, p, len);
}

/* A nested message (or packed repeated field) built in its own buffer. */
static void pb_message(struct pb *pb, int field, struct pb *sub)
{
	if (sub->oom)
		pb->oom = true;
	pb_len(pb, field, sub->b, sub->n);
	sub->n = 0;
}

/* The string table: index by value (0 is ""). */
struct strings {
	struct sq_intern fr;		/* reuses the frame interning */
};

static int64_t str_id(struct strings *st, const char *s)
{
	size_t k = sq_intern(&st->fr, s, strlen(s));
	return k == (size_t)-1 ? 0 : (int64_t)k;
}

/* Compresses in to f as gzip. */
static int gzip_to(FILE *f, const unsigned char *in, size_t len)
{
	unsigned char out[65536];
	z_stream z;
	int ret;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		ret = deflate(&z, Z_FINISH);
		if (fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (ret == Z_OK || (ret == Z_BUF_ERROR && z.avail_out == 0));
	deflateEnd(&z);
	return ret == Z_STREAM_END ? 0 : -EIO;
}

/* A label (sample field 3): key, and a string value. */
static void pb_label(struct pb *pb, struct pb *sub, int64_t key, int64_t value)
{
	pb_uint(sub, 1, key);
	pb_uint(sub, 2, value);
	pb_message(pb, 3, sub);
}

/* One sample (field 2): its locations leaf first, its values, and who ran it. */
/* --wall: a stack's second frame, its process's state, into buf ("" if it has none). */
static const char *wall_state(const char *frames, char *buf, size_t len)
{
	const char *a = strchr(frames, ';'), *b;

	buf[0] = 0;
	if (a && (b = strchr(++a, ';')) && (size_t)(b - a) < len) {
		memcpy(buf, a, b - a);
		buf[b - a] = 0;
	}
	return buf;
}

static void pprof_sample(struct pb *out, struct pb *msg, struct pb *sub, const struct sqp_stack *st,
			 const size_t *idx, size_t n, uint64_t weight, struct strings *s,
			 const struct sqp_pprof *o, bool wall)
{
	char pid[16], state[32];

	for (size_t k = n; k > 0; k--)
		pb_varint(sub, idx[k - 1] + 1);
	pb_message(msg, 1, sub);
	pb_varint(sub, st->samples);
	pb_varint(sub, weight);
	pb_message(msg, 2, sub);
	if (st->pid) {
		const char *cmd = o->cmdline ? o->cmdline(o->ctx, st->pid) : NULL;
		snprintf(pid, sizeof(pid), "%d", (int)st->pid);
		pb_label(msg, sub, str_id(s, "pid"), str_id(s, pid));
		if (cmd)
			pb_label(msg, sub, str_id(s, "cmdline"), str_id(s, cmd));
	}
	if (st->process)
		pb_label(msg, sub, str_id(s, "process"), str_id(s, st->process));
	if (wall && wall_state(st->frames, state, sizeof(state))[0])
		pb_label(msg, sub, str_id(s, "state"), str_id(s, state));
	if (st->trace.span) {	/* W3C's forms: 32 and 16 lower-case hex digits */
		char id[33];
		snprintf(id, sizeof(id), "%016llx%016llx", (unsigned long long)st->trace.trace_hi,
			 (unsigned long long)st->trace.trace_lo);
		pb_label(msg, sub, str_id(s, "trace_id"), str_id(s, id));
		snprintf(id, sizeof(id), "%016llx", (unsigned long long)st->trace.span);
		pb_label(msg, sub, str_id(s, "span_id"), str_id(s, id));
		snprintf(id, sizeof(id), "%016llx", (unsigned long long)st->trace.parent_span);
		pb_label(msg, sub, str_id(s, "parent_span_id"), str_id(s, id));
	}
	pb_message(out, 2, msg);
}

/* location (4) and function (5): one of each per frame, ids from 1. */
static void pprof_functions(struct pb *out, struct pb *msg, const struct sq_intern *fr, struct strings *s,
			    const struct sqp_pprof *o)
{
	for (size_t i = 0; i < fr->n; i++) {
		struct pb line = { 0 };
		const char *file = NULL;
		uint32_t l = 0;
		if (o->loc)
			o->loc(o->ctx, fr->names[i], &file, &l);
		pb_uint(&line, 1, i + 1);
		pb_uint(&line, 2, l);
		pb_uint(msg, 1, i + 1);
		pb_uint(msg, 2, 1);	/* mapping_id: the one mapping */
		pb_message(msg, 4, &line);
		pb_message(out, 4, msg);
		if (line.oom)
			out->oom = true;
		free(line.b);
		int64_t name = str_id(s, fr->names[i]);
		pb_uint(msg, 1, i + 1);
		pb_uint(msg, 2, name);
		pb_uint(msg, 3, name);
		pb_uint(msg, 4, file ? str_id(s, file) : 0);
		pb_uint(msg, 5, l);
		pb_message(out, 5, msg);
	}
}

/* mapping (3): one, the VM, whose functions are already named (pprof then looks for no
 * symbols), and says which binary ran. */
static void pprof_mapping(struct pb *out, struct pb *msg, struct strings *s, const struct sqp_pprof *o)
{
	pb_uint(msg, 1, 1);
	pb_uint(msg, 5, str_id(s, o->binary ? o->binary : "sqvm"));
	pb_uint(msg, 7, 1);	/* has_functions */
	pb_uint(msg, 8, 1);	/* has_filenames */
	pb_uint(msg, 9, 1);	/* has_line_numbers */
	pb_message(out, 3, msg);
}

/* sample_type (1): samples/count, then the weight's type and unit. */
static void pprof_types(struct pb *out, struct pb *msg, struct strings *s, int64_t type, int64_t unit)
{
	pb_uint(msg, 1, str_id(s, "samples"));
	pb_uint(msg, 2, str_id(s, "count"));
	pb_message(out, 1, msg);
	pb_uint(msg, 1, type);
	pb_uint(msg, 2, unit);
	pb_message(out, 1, msg);
}

int sqp_write_pprof(FILE *f, struct sqp_profile *p, const struct sqp_info *info, const struct sqp_pprof *o)
{
	struct pb out = { 0 }, msg = { 0 }, packed = { 0 };
	struct strings st = { { 0 } };
	struct sq_intern fr = { 0 };
	size_t *idx = NULL, n, cap = 0;
	int64_t s_type, s_unit;
	int err = 0;

	sqp_profile_merge(p);
	str_id(&st, "");	/* string 0 */
	str_id(&st, "samples");	/* strings 1 to 4: the sample types */
	str_id(&st, "count");
	s_type = str_id(&st, info->alloc ? "alloc_space" : info->wall ? "wall" : "cpu");
	s_unit = str_id(&st, info->alloc ? "bytes" : "nanoseconds");
	pprof_types(&out, &msg, &st, s_type, s_unit);
	for (size_t i = 0; i < p->n && !err; i++) {
		const struct sqp_stack *s = &p->stacks[i];
		err = stack_indices(&fr, s->frames, &idx, &n, &cap);
		if (!err)
			pprof_sample(&out, &msg, &packed, s, idx, n,
				     info->from_file && !info->alloc ? s->weight : weight_of(s, info), &st, o,
				     info->wall);
	}
	pprof_mapping(&out, &msg, &st, o);
	pprof_functions(&out, &msg, &fr, &st, o);
	/* time_nanos (9), duration_nanos (10), period_type (11), period (12), comment (13),
	 * default_sample_type (14) */
	pb_uint(&out, 9, o->start_ns);
	pb_uint(&out, 10, o->duration_ns ? o->duration_ns : (uint64_t)(info->seconds * 1e9));
	pb_uint(&msg, 1, s_type);
	pb_uint(&msg, 2, s_unit);
	pb_message(&out, 11, &msg);
	pb_uint(&out, 12, info->alloc ? info->alloc_period : period_ns(info));
	for (size_t i = 0; i < sizeof(o->comments) / sizeof(o->comments[0]) && o->comments[i]; i++)
		pb_uint(&out, 13, str_id(&st, o->comments[i]));
	pb_uint(&out, 14, s_type);
	/* string_table (6) last: every string is known by now (field order is free) */
	for (size_t i = 0; i < st.fr.n; i++)
		pb_len(&out, 6, st.fr.names[i], strlen(st.fr.names[i]));
	if (err || out.oom || msg.oom || packed.oom)
		err = err ? err : -ENOMEM;
	else
		err = gzip_to(f, out.b, out.n);
	free(out.b);
	free(msg.b);
	free(packed.b);
	free(idx);
	sq_intern_free(&fr);
	sq_intern_free(&st.fr);
	return err;
}
