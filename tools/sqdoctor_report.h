// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_report.h - sqdoctor's report: a table of the rules by score (text), or one
 * JSON object with every rule's score, finding, target, command and evidence (-j). */
#ifndef SQDOCTOR_REPORT_H
#define SQDOCTOR_REPORT_H

#include <stdio.h>

#include "sqdoctor_rules.h"
#include "sqdoctor_run.h"

/* The order of the report: by score, highest first; rules without evidence last. */
void sqd_sort(const struct sq_finding *f, int *order);
void sqd_print_text(FILE *out, const struct sq_evidence *e, const struct sq_window *w,
		    const struct sq_finding *f);
void sqd_print_json(FILE *out, const struct sq_evidence *e, const struct sq_window *w,
		    const struct sq_finding *f);

#endif
