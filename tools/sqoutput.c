// SPDX-License-Identifier: BSD-2-Clause
/* sqoutput.c - times, durations, histograms and JSON as every tool prints them; see
 * sqoutput.h. */
#define _GNU_SOURCE
#include "sqoutput.h"

#include <string.h>
#include <time.h>

/* ===================================================================== */
/* Time                                                                  */
/* ===================================================================== */

/* A CLOCK_MONOTONIC time as wall-clock seconds, broken down in local time, and the
 * microseconds within the second. */
static void wall_time(__u64 mono_ns, struct tm *tm, long long *micros)
{
	static __s64 offset;	/* wall clock minus monotonic clock, in ns */
	struct timespec rt;
	time_t secs;
	__s64 wall;

	if (!offset) {
		clock_gettime(CLOCK_REALTIME, &rt);
		offset = (rt.tv_sec * 1000000000LL + rt.tv_nsec) - (__s64)sq_mono_ns();
	}
	wall = (__s64)mono_ns + offset;
	secs = wall / 1000000000LL;
	localtime_r(&secs, tm);
	*micros = (wall % 1000000000LL) / 1000;
}

void sq_format_time(char *buf, size_t len, __u64 mono_ns, bool micros)
{
	long long us;
	struct tm tm;
	size_t n;

	wall_time(mono_ns, &tm, &us);
	n = strftime(buf, len, "%H:%M:%S", &tm);
	if (micros && n < len)
		snprintf(buf + n, len - n, ".%06lld", us);
}

void sq_format_iso_time(char *buf, size_t len, __u64 mono_ns)
{
	long long us;
	char zone[8];
	struct tm tm;
	size_t n;

	wall_time(mono_ns, &tm, &us);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	/* strftime's %z is +hhmm; RFC 3339 wants +hh:mm */
	strftime(zone, sizeof(zone), "%z", &tm);
	if (n < len)
		snprintf(buf + n, len - n, ".%06lld%.3s:%.2s", us, zone, zone + 3);
}

void sq_print_time_header(FILE *f)
{
	char buf[32];

	sq_format_time(buf, sizeof(buf), sq_mono_ns(), false);
	fprintf(f, "%s\n", buf);
}

void sq_format_duration(char *buf, size_t len, __u64 ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, len, "%g s", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%g ms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%g us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
}

/* ===================================================================== */
/* Histograms and JSON                                                   */
/* ===================================================================== */

static void print_stars(FILE *f, __u64 val, __u64 max, int width)
{
	int stars = max ? (int)(val * width / max) : 0;
	bool more = val > max;

	if (stars > width)
		stars = width;
	for (int i = 0; i < width; i++)
		fputc(i < stars ? '*' : ' ', f);
	if (more)
		fputc('+', f);
}

void sq_print_log2_hist(FILE *f, const __u64 *slots, int nslots, const char *unit)
{
	int last = -1, wide, stars;
	__u64 max = 0;

	for (int i = 0; i < nslots; i++) {
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	wide = last > 32;	/* ranges past 2^32 need wider columns */
	stars = wide ? 20 : 40;
	fprintf(f, "%*s%-*s : count    distribution\n", wide ? 15 : 5, "", wide ? 29 : 19, unit);
	for (int i = 0; i <= last; i++) {
		__u64 low = i == 0 ? 0 : 1ULL << i, high = (1ULL << (i + 1)) - 1;
		fprintf(f, "%*llu -> %-*llu : %-8llu |", wide ? 20 : 10, (unsigned long long)low,
			wide ? 20 : 10, (unsigned long long)high, (unsigned long long)slots[i]);
		print_stars(f, slots[i], max, stars);
		fprintf(f, "|\n");
	}
}

void sq_json_log2_hist(FILE *f, const __u64 *slots, int nslots)
{
	int last = -1;

	for (int i = 0; i < nslots; i++)
		if (slots[i])
			last = i;
	fputc('[', f);
	for (int i = 0; i <= last; i++) {
		__u64 low = i == 0 ? 0 : 1ULL << i, high = (1ULL << (i + 1)) - 1;
		fprintf(f, "%s{\"low\":%llu,\"high\":%llu,\"count\":%llu}", i ? "," : "",
			(unsigned long long)low, (unsigned long long)high, (unsigned long long)slots[i]);
	}
	fputc(']', f);
}

int sq_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range (Unicode table 3-7) */

	if (n == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else
		return 0;
	if ((size_t)len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

const char *sq_printable(const char *s)
{
	static char slots[SQ_PRINTABLE_SLOTS][SQ_PRINTABLE_MAX + 1];
	static unsigned next;
	char *out = slots[next++ % SQ_PRINTABLE_SLOTS];
	size_t o = 0, n;
	const unsigned char *p = (const unsigned char *)(s ? s : "?");

	n = strlen((const char *)p);
	/* an escape is at most 8 bytes (a two-byte C1 form); keep room for it and "..." */
	for (size_t i = 0; i < n;) {
		int len = sq_utf8_seq(p + i, n - i);
		bool c1 = len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0;

		if (o + 8 + 3 > SQ_PRINTABLE_MAX) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (len == 1 && p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\') {
			out[o++] = (char)p[i];
		} else if (len == 1 && p[i] == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
		} else if (len > 1 && !c1) {
			memcpy(out + o, p + i, (size_t)len);
			o += (size_t)len;
		} else {
			if (len == 0)
				len = 1;
			for (int k = 0; k < len; k++)
				o += (size_t)snprintf(out + o, 5, "\\x%02x", p[i + k]);
		}
		i += (size_t)len;
	}
	out[o] = '\0';
	return out;
}

void sq_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	fputc('"', f);
	for (size_t i = 0; i < n;) {
		unsigned char ch = p[i];
		int len = sq_utf8_seq(p + i, n - i);

		if (len > 1)
			fwrite(p + i, 1, (size_t)len, f);
		else if (len == 0)	/* not UTF-8: JSON text is, so U+FFFD, as decoders do */
			fputs("\\ufffd", f);
		else if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
		i += len ? (size_t)len : 1;
	}
	fputc('"', f);
}
