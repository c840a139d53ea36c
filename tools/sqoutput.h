// SPDX-License-Identifier: BSD-2-Clause
/* sqoutput.h - what the tools print in the same shape: times (event times are
 * CLOCK_MONOTONIC, shown as wall time), durations, the log2 histogram in the
 * "low -> high : count |****|" form every bcc and libbpf-tools user reads (and its JSON
 * form), JSON strings, and the length of a top-N table. */
#ifndef SQOUTPUT_H
#define SQOUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "sqopts.h"

/* "11:05:02", or with micros "11:05:02.123456", local time. */
void sq_format_time(char *buf, size_t len, __u64 mono_ns, bool micros);

/* The same instant for JSON: RFC 3339 local time with its offset,
 * "2026-12-01T11:05:02.123456+00:00". */
void sq_format_iso_time(char *buf, size_t len, __u64 mono_ns);

/* -T: the time now on a line of its own, before a report. */
void sq_print_time_header(FILE *f);

/* A duration as the user would write it: "2 s", "500 ms", "1.5 us", "100 ns". */
void sq_format_duration(char *buf, size_t len, __u64 ns);

/* The histogram of slots (nonzero range only), and its JSON array of {low, high, count}. */
void sq_print_log2_hist(FILE *f, const __u64 *slots, int nslots, const char *unit);
void sq_json_log2_hist(FILE *f, const __u64 *slots, int nslots);

/* The length of the well-formed UTF-8 sequence at s (at most n bytes: no overlong form,
 * no surrogate, nothing past U+10FFFF), or 0 if there is none. */
int sq_utf8_seq(const unsigned char *s, size_t n);

/* s made safe for a terminal: C0 and C1 controls (raw bytes 0x80-0x9f and their UTF-8
 * forms U+0080-U+009F), DEL and bytes that are not well-formed UTF-8 become \xNN, and a
 * backslash \\, so that no name from a target reaches the terminal as a control and two
 * names never print alike. The answer is one of SQ_PRINTABLE_SLOTS buffers used in turn
 * (several names in one printf), each at most SQ_PRINTABLE_MAX bytes: a longer name ends
 * in "...". NULL prints as "?". */
#define SQ_PRINTABLE_SLOTS 8
#define SQ_PRINTABLE_MAX 1024
const char *sq_printable(const char *s);

/* A JSON string literal for s, escaped; well-formed UTF-8 whatever s holds (a byte that
 * is not becomes U+FFFD, as a decoder would make it), so that a strict parser takes it. */
void sq_json_str(FILE *f, const char *s);

/* The rows a table of n rows shows with -n top (0 or less: all). */
static inline size_t sq_shown(size_t n, long top)
{
	return top > 0 && (size_t)top < n ? (size_t)top : n;
}

#endif
