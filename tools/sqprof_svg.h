// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_svg.h - an interactive flame graph of folded stacks, as one self-contained SVG
 * file: hover a frame for its name and count, click to zoom into it, Esc or "Reset Zoom"
 * to zoom out, "Search" to highlight frames matching a regular expression. */
#ifndef SQPROF_SVG_H
#define SQPROF_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include "sqprof_report.h"

/* Writes the flame graph of p (merged first). bytes: the counts are bytes, not samples.
 * Returns 0, or -errno. */
int sqp_write_svg(FILE *f, struct sqp_profile *p, const char *title, const char *subtitle,
		  bool bytes);

#endif
