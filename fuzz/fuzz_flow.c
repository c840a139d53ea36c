// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_flow.c - libFuzzer target: sqflow's trace writers (tools/sqflow_slices.c with
 * sqflow_chrome.c, then with sqflow_perfetto.c) over an arbitrary stream of entries and
 * returns, checked for what their headers promise. The stream is decoded by BPF from
 * records a target wrote: whatever the target (or a full ring buffer) makes of it —
 * returns without entries, entries without returns, times that go backwards, any
 * processes on any threads, any bytes as names — the Chrome trace must parse, its slices
 * must lie in the window and nest per track, and no two tracks may share an id; the same
 * stream's Perfetto trace must be well-formed protobuf holding a begin and an end for
 * each of those slices. A crash, a sanitizer report or a broken promise (abort) is a
 * finding.
 *
 * The input: a header, then records of REC bytes each.
 *   header   u8 stop: the record before which the window closes (sqflow_chrome_stop;
 *            0: never closed); u8 before: how far before the window's start the stream
 *            starts, in 100 ns
 *   record   u8 op (bit 0 return, bit 1 block, bit 7 time goes back), u8 process (255: a
 *            process whose low 32 bits are 7's), u8 frame, u8 where (pid: bits 0-1, thread:
 *            bits 2-3), u16 dt (ns), then NAME bytes of the call's name (NUL-padded) */
#define _GNU_SOURCE
#include "sqflow_chrome.h"
#include "sqflow_perfetto.h"
#include "sqoutput.h"
#include "fuzz_watchdog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME 10
#define REC (6 + NAME)
#define BASE_NS 1000000000ULL
#define MAX_SLICES 8192

struct slice {
	unsigned pid, tid;
	uint64_t ts, end;		/* ns, as printed */
};

static struct slice slices[MAX_SLICES];
static size_t nslices, nwritten;	/* kept for the nesting check; written */

#define check(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_flow: broken: %s\n", #cond); abort(); } } while (0)

/* A JSON string at *p (after its quote): well-formed UTF-8, escapes only as JSON has
 * them, no raw control; *p is left after the closing quote. */
static void check_string(const char **p)
{
	const unsigned char *s = (const unsigned char *)*p;

	for (;;) {
		int len = sq_utf8_seq(s, strlen((const char *)s));

		check(len > 0);
		if (*s == '"')
			break;
		check(*s >= 0x20);
		if (*s == '\\') {
			s++;
			check(strchr("\"\\/bfnrtu", *s) && *s);
			if (*s == 'u')
				for (int i = 1; i <= 4; i++)
					check(strchr("0123456789abcdefABCDEF", s[i]) && s[i]);
		}
		s += len;
	}
	*p = (const char *)s + 1;
}

static uint64_t us_to_ns(const char *s)
{
	unsigned long long us;
	unsigned frac;
	int n = 0;

	check(sscanf(s, "%llu.%3u%n", &us, &frac, &n) == 2 && n > 0 && s[n - 4] == '.');
	return us * 1000 + frac;
}

/* One event line: the metadata as written, or a slice (kept for the nesting check). */
static void check_line(const char *line, uint64_t window_ns)
{
	const char *p = line, *rest;

	check(strncmp(p, "{\"name\":\"", 9) == 0);
	p += 9;
	check_string(&p);
	if (strncmp(p, ",\"ph\":\"M\"", 9) == 0) {
		check((p = strstr(p, "\"args\":{\"name\":\"")));
		p += 16;
		check_string(&p);
		check(strcmp(p, "}}") == 0 || strcmp(p, "}},") == 0);
		return;
	}
	struct slice sl;
	check(strncmp(p, ",\"cat\":\"", 8) == 0);
	check(strncmp(p + 8, "method\",\"ph\":\"X\",\"ts\":", 22) == 0 ||
	      strncmp(p + 8, "block\",\"ph\":\"X\",\"ts\":", 21) == 0);
	p = strstr(p, "\"ts\":") + 5;
	sl.ts = us_to_ns(p);
	check((rest = strstr(p, ",\"dur\":")));
	sl.end = sl.ts + us_to_ns(rest + 7);
	check((rest = strstr(rest, ",\"pid\":")));
	check(sscanf(rest, ",\"pid\":%u,\"tid\":%u", &sl.pid, &sl.tid) == 2);
	check(sl.end <= window_ns);
	nwritten++;
	if (nslices < MAX_SLICES)
		slices[nslices++] = sl;
}

static int by_start(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* the longer first */
}

/* Sorted by start, the longer first: each slice ends within every open one it starts in. */
static void check_nesting(void)
{
	uint64_t ends[MAX_SLICES];
	size_t depth = 0;

	qsort(slices, nslices, sizeof(*slices), by_start);
	for (size_t i = 0; i < nslices; i++) {
		if (i && (slices[i].pid != slices[i - 1].pid || slices[i].tid != slices[i - 1].tid))
			depth = 0;
		while (depth && slices[i].ts >= ends[depth - 1])
			depth--;
		check(!depth || slices[i].end <= ends[depth - 1]);
		ends[depth++] = slices[i].end;
	}
}

/* Thread names name each track once: no two tracks share (pid, tid). */
static void check_tracks(char *out)
{
	unsigned pids[SQFLOW_MAX_TRACKS], tids[SQFLOW_MAX_TRACKS];
	size_t n = 0;

	for (char *p = out; (p = strstr(p, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":")); p++) {
		check(n < SQFLOW_MAX_TRACKS);
		check(sscanf(p + 37, "%u,\"tid\":%u", &pids[n], &tids[n]) == 2);
		for (size_t i = 0; i < n; i++)
			check(pids[i] != pids[n] || tids[i] != tids[n]);
		n++;
	}
}

static void check_trace(char *out, size_t len, uint64_t window_ns)
{
	static const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
	char *line, *next;

	check(len > sizeof(head) && memcmp(out, head, sizeof(head) - 1) == 0);
	check(out[len - 1] == '\n');
	check_tracks(out);
	nslices = nwritten = 0;
	for (line = out + sizeof(head) - 1; *line != ']'; line = next + 1) {
		check((next = strchr(line, '\n')));
		*next = '\0';
		/* nothing in the window: the list is empty */
		check(*line || (line == out + sizeof(head) - 1 && next[1] == ']'));
		if (*line)
			check_line(line, window_ns);
	}
	check(strncmp(line, "],\"otherData\":{\"tool\":\"sqflow\",\"events\":\"", 40) == 0);
	check_nesting();
}

/* A varint at *p, before end; false if it runs past end or past 64 bits. */
static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Well-formed UTF-8 in [p, end), as a string field must be. */
static void check_utf8(const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		int len = sq_utf8_seq(p, (size_t)(end - p));

		check(len > 0);
		p += len;
	}
}

enum { PB_TRACE, PB_PACKET, PB_EVENT, PB_INTERNED, PB_NAME, PB_TRACK };

/* The message of kind in field field of a message of kind parent (-1: none followed). */
static int pb_child(int parent, uint64_t field)
{
	if (parent == PB_TRACE)
		return PB_PACKET;
	if (parent == PB_PACKET)
		return field == 11 ? PB_EVENT : field == 12 ? PB_INTERNED : field == 60 ? PB_TRACK : -1;
	return parent == PB_INTERNED && field == 2 ? PB_NAME : -1;
}

/* The fields of a message of kind in [p, end): each within it; a Trace holds only
 * packets; TrackEvent types are counted; event names (interned, or the event's own) and
 * track names are well-formed UTF-8. */
static void pb_walk(const uint8_t *p, const uint8_t *end, int kind, size_t types[4])
{
	while (p < end) {
		uint64_t key, v;

		check(pb_varint(&p, end, &key) && (kind != PB_TRACE || key == (1 << 3 | 2)));
		if ((key & 7) == 0) {
			check(pb_varint(&p, end, &v));
			if (kind == PB_EVENT && key >> 3 == 9) {
				check(v >= 1 && v <= 3);
				types[v]++;
			}
		} else if ((key & 7) == 1) {
			check(end - p >= 8);
			p += 8;
		} else {
			check((key & 7) == 2 && pb_varint(&p, end, &v) && v <= (uint64_t)(end - p));
			if (((kind == PB_NAME || kind == PB_TRACK) && key >> 3 == 2) || (kind == PB_EVENT && key >> 3 == 23))
				check_utf8(p, p + v);
			else if (pb_child(kind, key >> 3) >= 0)
				pb_walk(p, p + v, pb_child(kind, key >> 3), types);
			p += v;
		}
	}
}

/* The input's stream into s; the window's end (0: never closed) and the latest time. */
static size_t feed(struct sqflow_slices *s, const uint8_t *data, size_t size, uint64_t *end_ns, uint64_t *max_ts)
{
	struct sqflow_event e;
	uint64_t ts;
	char name[NAME + 1];
	size_t events = 0;

	*end_ns = 0;
	ts = *max_ts = BASE_NS - 100ULL * data[1];
	for (size_t off = 2, i = 1; off + REC <= size; off += REC, i++) {
		const uint8_t *r = data + off;
		uint16_t dt = (uint16_t)(r[4] | r[5] << 8);

		if (i == data[0]) {
			*end_ns = ts + dt;
			sqflow_slices_stop(s, *end_ns);
		}
		ts = r[0] & 0x80 ? ts - (ts > dt ? dt : 0) : ts + dt;
		if (ts > *max_ts)
			*max_ts = ts;
		memset(&e, 0, sizeof(e));
		e.type = r[0] & 1 ? SQFLOW_RETURN : SQFLOW_ENTRY;
		e.block = (r[0] >> 1) & 1;
		e.process = r[1] == 255 ? (1ULL << 32) | 7 : r[1];
		e.frame = 0x1000 + 16ULL * r[2];
		e.pid = 100 + (r[3] & 3);
		e.tid = e.pid + ((r[3] >> 2) & 3);
		e.ts_ns = ts;
		memcpy(name, r + 6, NAME);
		name[NAME] = '\0';
		sqflow_slices_event(s, &e, name[0] ? strdup(name) : NULL);
		events++;
	}
	return events;
}

/* The names a VM gives its processes: none, or one a terminal and a JSON parser would
 * choke on (a control sequence, a quote, a backslash, a byte that is not UTF-8). */
static void namer(void *ctx, __u32 pid, __u64 process, char *name)
{
	strcpy(name, process & 1 ? "evil\x1b[2J\"\\\xff\x9b" : "");
}

/* Runs the stream through a writer to f (a memory stream: closed here, so that its buffer is complete). */
static void write_trace(struct sqflow_sink sink, FILE *f, const uint8_t *data, size_t size,
			uint64_t *end_ns, uint64_t *max_ts)
{
	struct sqflow_slices *s;
	size_t events;

	if (!sink.ctx || !(s = sqflow_slices_begin(sink, namer, NULL, BASE_NS)))
		abort();
	events = feed(s, data, size, end_ns, max_ts);
	sqflow_slices_end(s, events, 0);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t max_ts, end_ns;
	char *out = NULL, *pb = NULL;
	size_t len = 0, pblen = 0, types[4] = { 0 };
	FILE *f;

	if (size < 2)
		return 0;
	fuzz_watchdog_arm(5000);
	if (!(f = open_memstream(&out, &len)))
		abort();
	write_trace(sqflow_chrome_sink(f, BASE_NS, NULL, NULL), f, data, size, &end_ns, &max_ts);
	/* what is written lies within the window: to its end or the latest time seen (times
	 * come from the kernel's clock, which does not go back: a window closed before the
	 * latest event is the fuzzer's, and the writer's answer is its latest time) */
	if (max_ts > end_ns)
		end_ns = max_ts;
	check_trace(out, len, (end_ns > BASE_NS ? end_ns : BASE_NS) - BASE_NS);
	free(out);
	/* the same stream as Perfetto's protobuf: a begin and an end for every slice */
	if (!(f = open_memstream(&pb, &pblen)))
		abort();
	write_trace(sqflow_perfetto_sink(f, BASE_NS), f, data, size, &end_ns, &max_ts);
	pb_walk((const uint8_t *)pb, (const uint8_t *)pb + pblen, PB_TRACE, types);
	check(types[1] == nwritten && types[2] == nwritten);
	free(pb);
	fuzz_watchdog_disarm();
	return 0;
}
