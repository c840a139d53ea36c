// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_report.c - the text and JSON reports (sqdoctor_report.h). Every name in them
 * came from the target (through the recorders): the findings hold them made printable
 * (sqdoctor_rule.h), and the JSON escapes them again. */
#include "sqdoctor_report.h"

#include <string.h>

#include "sqoutput.h"

static const char *const recorder_names[SQD_NSOURCES] = {
	"sqgc", "sqalloc", "sqsched", "sqreq", "sqio", "sqprof", "sqprof_wall",
};

/* The evidence is an object a rule wrote from numbers alone: checked all the same (a
 * NaN would print as "nan"). */
static bool valid_object(const char *text)
{
	struct sq_jv *v = sq_jv_parse(text, strlen(text), NULL, 0);
	bool ok = v && v->type == SQ_JSON_OBJECT;

	sq_jv_free(v);
	return ok;
}

void sqd_sort(const struct sq_finding *f, int *order)
{
	for (int i = 0; i < SQD_NRULES; i++)
		order[i] = i;
	for (int i = 1; i < SQD_NRULES; i++)	/* stable: ties keep the rules' order */
		for (int j = i; j > 0 && f[order[j]].score > f[order[j - 1]].score; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

static void print_window(FILE *out, const struct sq_evidence *e, const struct sq_window *w)
{
	fprintf(out, "sqdoctor: PID %d (%s), %.1f s recorded%s\n", e->pid, sq_printable(e->cmdline),
		e->seconds, w->vm_exited ? ", until the VM exited" : w->interrupted ? ", until Ctrl-C" : "");
}

void sqd_print_text(FILE *out, const struct sq_evidence *e, const struct sq_window *w,
		    const struct sq_finding *f)
{
	int order[SQD_NRULES];

	sqd_sort(f, order);
	print_window(out, e, w);
	fprintf(out, "%5s  %-24s  %s\n", "SCORE", "RULE", "FINDING");
	for (int i = 0; i < SQD_NRULES; i++) {
		const struct sq_finding *r = &f[order[i]];
		if (r->score < 0)
			fprintf(out, "%5s  %-24s  %s\n", "-", r->title, r->text);
		else
			fprintf(out, "%5d  %-24s  %s%s%s\n", r->score, r->title, r->text,
				r->score >= 50 && r->command[0] ? "  -> " : "",
				r->score >= 50 ? r->command : "");
	}
	fflush(out);
}

void sqd_print_json(FILE *out, const struct sq_evidence *e, const struct sq_window *w,
		    const struct sq_finding *f)
{
	int order[SQD_NRULES];

	sqd_sort(f, order);
	fprintf(out, "{\"pid\":%d,\"cmdline\":", e->pid);
	sq_json_str(out, e->cmdline);
	fprintf(out, ",\"seconds\":%.3f,\"interrupted\":%s,\"vm_exited\":%s,\"rules\":[", e->seconds,
		w->interrupted ? "true" : "false", w->vm_exited ? "true" : "false");
	for (int i = 0; i < SQD_NRULES; i++) {
		const struct sq_finding *r = &f[order[i]];
		fprintf(out, "%s{\"id\":\"%s\",\"title\":\"%s\",\"score\":", i ? "," : "", r->id, r->title);
		if (r->score < 0)
			fprintf(out, "null");
		else
			fprintf(out, "%d", r->score);
		fprintf(out, ",\"finding\":");
		sq_json_str(out, r->text);
		fprintf(out, ",\"target\":");
		sq_json_str(out, r->target);
		fprintf(out, ",\"command\":");
		sq_json_str(out, r->command);
		fprintf(out, ",\"evidence\":%s}", valid_object(r->evidence) ? r->evidence : "{}");
	}
	fprintf(out, "],\"recorders\":{");
	for (int s = 0; s < SQD_NSOURCES; s++) {
		fprintf(out, "%s\"%s\":{\"ok\":%s,\"error\":", s ? "," : "", recorder_names[s],
			e->src[s].ok ? "true" : "false");
		if (e->src[s].ok)
			fprintf(out, "null");
		else
			sq_json_str(out, e->src[s].why);
		fprintf(out, "}");
	}
	fprintf(out, "},\"storms_lost\":%llu}\n", (unsigned long long)e->storms_lost);
	fflush(out);
}
