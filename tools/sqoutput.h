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

/* A JSON string literal for s, escaped. */
void sq_json_str(FILE *f, const char *s);

/* The rows a table of n rows shows with -n top (0 or less: all). */
static inline size_t sq_shown(size_t n, long top)
{
	return top > 0 && (size_t)top < n ? (size_t)top : n;
}

#endif
