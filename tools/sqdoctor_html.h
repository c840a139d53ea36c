// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_html.h - sqdoctor --html: the report as one self-contained page (no script or
 * style from elsewhere): the rules by score, then the evidence as small charts drawn as
 * inline SVG (GC pauses over time and by length, the green processes' states, run-queue
 * latency, routes' percentiles, I/O waits and allocation by method) and sqprof's CPU
 * flame graph. Every section is bounded, so the page stays under SQD_HTML_MAX bytes. */
#ifndef SQDOCTOR_HTML_H
#define SQDOCTOR_HTML_H

#include "sqdoctor_rules.h"

#define SQD_HTML_MAX (2u << 20)

/* Writes the page to path (replaced whole); flamegraph: sqprof's SVG, or NULL. 0, or
 * -errno. */
int sqd_write_html(const char *path, const struct sq_evidence *e, const struct sq_finding *f,
		   const char *flamegraph);

#endif
