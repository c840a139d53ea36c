// SPDX-License-Identifier: BSD-2-Clause
/* metrics_test.c - tools/sqmetrics.c's two formats byte for byte (the same families in the
 * text format and in OpenMetrics: metadata, counter and info names, canonical le,
 * exemplars in and out of their bucket, over the label bound, escaped, # EOF), and
 * tools/sqaccept.c's choice on a table of Accept headers. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqaccept.h"
#include "sqmetrics.h"

static int failures, checks;

static void expect_text(const char *what, const char *got, const char *want)
{
	checks++;
	if (strcmp(got, want)) {
		failures++;
		printf("FAIL %s\n--- want\n%s--- got\n%s---\n", what, want, got);
	}
}

/* The families below in format fmt, as one string (the caller frees it). */
static char *write_all(enum sqm_format fmt)
{
	static const uint64_t slots[6] = { 1, 0, 2, 0, 0, 3 };	/* 0-1us, 2-4us, 16-32us+ */
	char *buf = NULL, route[160];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct sqm m = { f, fmt };
	struct sqm_label l[2] = { { "pid", "7" }, { "route", "GET /\"q\"\\\n" } };
	struct sqm_exemplar ex[5] = { 0 };

	/* bucket 0 (up to 1 us): 0.9 us; bucket 2 ((2, 4] us): 4 us exactly, the bound */
	ex[0] = (struct sqm_exemplar){ { { "request_id", "1" }, { "route", "GET /\"q\"\\\n" } }, 2, 900, 1700000000123456789ULL };
	ex[2] = (struct sqm_exemplar){ { { "request_id", "12" } }, 1, 4000, 1700000001000000000ULL };
	/* bucket 3 ((4, 8] us) holds nothing, and this one lies: 2 us is not in it */
	ex[3] = (struct sqm_exemplar){ { { "request_id", "13" } }, 1, 2000, 1 };
	/* +Inf (over 8 us): its labels 10 + 2 + 5 + 112 = 129 code points, one too many */
	memset(route, 'x', 112);
	route[112] = 0;
	ex[4] = (struct sqm_exemplar){ { { "request_id", "99" }, { "route", route } }, 2, 40000, 2000000000ULL };

	sqm_family(&m, "t_info", "info", "A \"thing\" \\ here.");
	sqm_uint(&m, "t_info", l, 1, 1);
	sqm_family(&m, "t_calls_total", "counter", "Calls.");
	sqm_uint(&m, "t_calls_total", l, 1, 42);
	sqm_family(&m, "t_pause_seconds_total", "counter", "Paused.");
	sqm_seconds(&m, "t_pause_seconds_total", NULL, 0, 1500000000ULL);
	sqm_family(&m, "t_latency_seconds", "histogram", "Latency.");
	sqm_log2_us_histogram(&m, "t_latency_seconds", l, 2, slots, 6, 4, 12345, ex);
	sqm_end(&m);
	fclose(f);
	return buf;
}

static void test_formats(void)
{
	char *text = write_all(SQM_TEXT), *om = write_all(SQM_OPENMETRICS);

	expect_text("text format", text,
		    "# HELP t_info A \"thing\" \\\\ here.\n"
		    "# TYPE t_info gauge\n"
		    "t_info{pid=\"7\"} 1\n"
		    "# HELP t_calls_total Calls.\n"
		    "# TYPE t_calls_total counter\n"
		    "t_calls_total{pid=\"7\"} 42\n"
		    "# HELP t_pause_seconds_total Paused.\n"
		    "# TYPE t_pause_seconds_total counter\n"
		    "t_pause_seconds_total 1.5\n"
		    "# HELP t_latency_seconds Latency.\n"
		    "# TYPE t_latency_seconds histogram\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"0.000001\"} 1\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"0.000002\"} 1\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"0.000004\"} 3\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"0.000008\"} 3\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"+Inf\"} 6\n"
		    "t_latency_seconds_sum{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\"} 0.000012345\n"
		    "t_latency_seconds_count{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\"} 6\n");
	expect_text("OpenMetrics", om,
		    "# TYPE t info\n"
		    "# HELP t A \\\"thing\\\" \\\\ here.\n"
		    "t_info{pid=\"7\"} 1\n"
		    "# TYPE t_calls counter\n"
		    "# HELP t_calls Calls.\n"
		    "t_calls_total{pid=\"7\"} 42\n"
		    "# TYPE t_pause_seconds counter\n"
		    "# UNIT t_pause_seconds seconds\n"
		    "# HELP t_pause_seconds Paused.\n"
		    "t_pause_seconds_total 1.5\n"
		    "# TYPE t_latency_seconds histogram\n"
		    "# UNIT t_latency_seconds seconds\n"
		    "# HELP t_latency_seconds Latency.\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"1e-06\"} 1"
		    " # {request_id=\"1\",route=\"GET /\\\"q\\\"\\\\\\n\"} 0.0000009 1700000000.123456789\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"2e-06\"} 1\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"4e-06\"} 3"
		    " # {request_id=\"12\"} 0.000004 1700000001\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"8e-06\"} 3\n"
		    "t_latency_seconds_bucket{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\",le=\"+Inf\"} 6\n"
		    "t_latency_seconds_sum{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\"} 0.000012345\n"
		    "t_latency_seconds_count{pid=\"7\",route=\"GET /\\\"q\\\"\\\\\\n\"} 6\n"
		    "# EOF\n");
	free(text);
	free(om);
}

/* le in OpenMetrics for every exported bucket, 1 us to 2^25 us, and a few more. */
static void test_canonical(void)
{
	static const uint64_t slots[32] = { 0 };
	static const char *const want[] = {
		"1e-06", "2e-06", "4e-06", "8e-06", "1.6e-05", "3.2e-05", "6.4e-05", "0.000128", "0.000256",
		"0.000512", "0.001024", "0.002048", "0.004096", "0.008192", "0.016384", "0.032768", "0.065536",
		"0.131072", "0.262144", "0.524288", "1.048576", "2.097152", "4.194304", "8.388608", "16.777216",
		"33.554432", "67.108864", "134.217728", "268.435456", "536.870912", "1073.741824", "2147.483648",
	};
	char *buf = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct sqm m = { f, SQM_OPENMETRICS };
	int i = 0;

	sqm_log2_us_histogram(&m, "h", NULL, 0, slots, 32, 32, 0, NULL);
	fclose(f);
	for (p = buf; (p = strstr(p, "le=\"")) && i < 32; i++) {
		p += 4;
		checks++;
		if (strncmp(p, want[i], strlen(want[i])) || p[strlen(want[i])] != '"') {
			failures++;
			printf("FAIL canonical le of 2^%d us: %.20s, want %s\n", i, p, want[i]);
		}
	}
	checks++;
	if (i != 32) {
		failures++;
		printf("FAIL canonical le: %d buckets\n", i);
	}
	free(buf);
}

static void test_accept(void)
{
	static const char *const offers[] = { SQM_CONTENT_TYPE, SQM_OPENMETRICS_TYPE };
	static const struct {
		const char *accept;
		int want;
	} cases[] = {
		{ NULL, 0 },
		{ "", 0 },
		{ "  ", 0 },
		{ "text/plain", 0 },
		{ "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
		  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1", 1 },
		{ "application/openmetrics-text", 1 },
		{ "application/openmetrics-text ; version = \"1.0.0\"", 1 },
		{ "Application/OPENMETRICS-text;VERSION=1.0.0;Charset=UTF-8", 1 },
		{ "application/openmetrics-text;version=0.0.1", -1 },
		{ "application/openmetrics-text;charset=latin1", -1 },
		{ "application/*", 1 },
		{ "*/*", 0 },
		{ "*/*;q=0", -1 },
		{ "text/*;q=0.5, application/*;q=0.6", 1 },
		{ "text/plain, application/openmetrics-text", 0 },
		{ "application/openmetrics-text, text/plain", 1 },
		{ "*/*, application/openmetrics-text;q=0.999", 0 },
		{ "application/openmetrics-text;q=0, */*", 0 },
		{ "text/plain;q=0, */*", 1 },
		{ "text/plain;q=0.5, text/plain;version=0.0.4;q=0.1, application/openmetrics-text;q=0.2", 1 },
		{ "application/openmetrics-text;q=1.001", -1 },
		{ "application/openmetrics-text;q=0.3333, text/plain;q=0.1", 0 },
		{ "application/openmetrics-text;q=, text/plain;q=0.1", 0 },
		{ "application/openmetrics-text;q=0.5;foo=bar, text/plain;q=0.4", 1 },
		{ "application/openmetrics-text;x=\"a,b\", text/plain;q=0.1", 0 },
		{ "application, /x, */plain, ;;, ,,", -1 },
		{ "application/json", -1 },
		{ "text/plain;a=1;b=2;c=3;d=4;e=5;f=6;g=7;h=8;i=9, application/openmetrics-text;q=0.1", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = sq_accept_choose(cases[i].accept, offers, 2);
		checks++;
		if (got != cases[i].want) {
			failures++;
			printf("FAIL Accept: %s: %d, want %d\n", cases[i].accept ? cases[i].accept : "(none)", got,
			       cases[i].want);
		}
	}
}

int main(void)
{
	test_formats();
	test_canonical();
	test_accept();
	printf("metrics_test: %d of %d checks passed\n", checks - failures, checks);
	return failures ? 1 : 0;
}
