// SPDX-License-Identifier: BSD-2-Clause
/* sqopts.c - the common options every tool has, and its messages; see sqopts.h. */
#define _GNU_SOURCE
#include "sqopts.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *tool_name = "sqtool";

void sq_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void sq_init(struct sq_common *c, const char *tool)
{
	memset(c, 0, sizeof(*c));
	c->tool = tool_name = tool;
	c->start_ns = sq_mono_ns();
	c->pidfd = -1;
	argp_err_exit_status = SQ_EXIT_USAGE;
}

int sq_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int sq_parse_duration(const char *s, __u64 unit_ns, __u64 *ns)
{
	static const struct { const char *suffix; __u64 ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "m", 60000000000ULL }, { "h", 3600000000000ULL },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	if (*end) {
		unit_ns = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].suffix) == 0)
				unit_ns = units[i].ns;
		if (!unit_ns)
			return -EINVAL;
	}
	if (v * unit_ns > 9e18)
		return -ERANGE;
	*ns = (__u64)llround(v * unit_ns);
	return 0;
}

/* [interval [count]] */
static void parse_positional(char *arg, struct argp_state *state, struct sq_common *c)
{
	if (c->npositional == 0) {
		if (sq_parse_duration(arg, 1000000000ULL, &c->interval_ns) || c->interval_ns == 0)
			argp_error(state, "invalid interval '%s' (seconds, or with a unit: 500ms)", arg);
	} else if (c->npositional == 1) {
		if (sq_parse_long(arg, 1, LONG_MAX, &c->count))
			argp_error(state, "invalid count '%s'", arg);
	} else {
		argp_error(state, "unexpected argument '%s'", arg);
	}
	c->npositional++;
}

int sq_parse_common_opt(int key, char *arg, struct argp_state *state, struct sq_common *c)
{
	long v;

	switch (key) {
	case 'p':
		if (sq_parse_long(arg, 1, INT_MAX, &v))
			argp_error(state, "invalid PID '%s'", arg);
		c->pid = (pid_t)v;
		return 0;
	case SQ_OPT_VM:
		c->vm = arg;
		return 0;
	case 'T':
		c->timestamp = true;
		return 0;
	case 'j':
		c->format = SQ_FORMAT_JSON;
		return 0;
	case 'v':
		c->verbose = true;
		return 0;
	case 'd':
		if (sq_parse_duration(arg, 1000000000ULL, &c->duration_ns) || !c->duration_ns)
			argp_error(state, "invalid duration '%s' (seconds, or with a unit: 500ms, 2m)", arg);
		return 0;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		return 0;
	case SQ_OPT_VERSION:
		printf("%s\n", argp_program_version);
		exit(0);
	case ARGP_KEY_ARG:
		parse_positional(arg, state, c);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}
