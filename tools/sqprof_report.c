// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_report.c - folded stacks and the reports made from them; see sqprof_report.h. */
#define _GNU_SOURCE
#include "sqprof_report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sqintern.h"
#include "sqoutput.h"

/* ===================================================================== */
/* The profile                                                           */
/* ===================================================================== */

int sqp_profile_add(struct sqp_profile *p, const char *frames, uint64_t samples, uint64_t weight)
{
	return sqp_profile_add_labeled(p, frames, 0, NULL, samples, weight);
}

int sqp_profile_add_labeled(struct sqp_profile *p, const char *frames, pid_t pid, const char *process,
			    uint64_t samples, uint64_t weight)
{
	return sqp_profile_add_traced(p, frames, pid, process, NULL, samples, weight);
}

int sqp_profile_add_traced(struct sqp_profile *p, const char *frames, pid_t pid, const char *process,
			   const struct sqp_trace *t, uint64_t samples, uint64_t weight)
{
	struct sqp_stack *st;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct sqp_stack *grown = realloc(p->stacks, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		p->stacks = grown;
		p->cap = cap;
	}
	st = &p->stacks[p->n];
	*st = (struct sqp_stack){ .frames = strdup(frames), .samples = samples, .weight = weight, .pid = pid,
				  .process = process ? strdup(process) : NULL };
	if (t && t->span)
		st->trace = *t;
	if (!st->frames || (process && !st->process)) {
		free(st->frames);
		free(st->process);
		return -ENOMEM;
	}
	p->n++;
	p->merged = false;
	return 0;
}

int sqp_profile_move_pid(struct sqp_profile *from, pid_t pid, struct sqp_profile *to)
{
	size_t kept = 0;

	for (size_t i = 0; i < from->n; i++) {
		if (from->stacks[i].pid != pid) {
			from->stacks[kept++] = from->stacks[i];
			continue;
		}
		if (to->n == to->cap) {
			size_t cap = to->cap ? 2 * to->cap : 64;
			struct sqp_stack *grown = realloc(to->stacks, cap * sizeof(*grown));
			if (!grown) {
				while (i < from->n)	/* the rest stays where it was */
					from->stacks[kept++] = from->stacks[i++];
				from->n = kept;
				return -ENOMEM;
			}
			to->stacks = grown;
			to->cap = cap;
		}
		to->stacks[to->n++] = from->stacks[i];
		to->merged = false;
	}
	from->n = kept;
	return 0;
}

/* Orders two trace contexts (none first). */
static int by_trace(const struct sqp_trace *a, const struct sqp_trace *b)
{
	const uint64_t x[] = { a->trace_hi, a->trace_lo, a->span, a->parent_span };
	const uint64_t y[] = { b->trace_hi, b->trace_lo, b->span, b->parent_span };

	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* Frames first (the reports without labels then find equal frames side by side), then
 * the VM, then the green process (not known first), then the trace. */
static int by_frames(const void *pa, const void *pb)
{
	const struct sqp_stack *a = pa, *b = pb;
	int d = strcmp(a->frames, b->frames);

	if (d)
		return d;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (!a->process || !b->process) {
		if (!!a->process != !!b->process)
			return !!a->process - !!b->process;
	} else if ((d = strcmp(a->process, b->process))) {
		return d;
	}
	return by_trace(&a->trace, &b->trace);
}

void sqp_profile_merge(struct sqp_profile *p)
{
	size_t out = 0;

	if (p->merged)
		return;
	if (p->n)	/* no stacks: p->stacks may be NULL, which qsort must not be given */
		qsort(p->stacks, p->n, sizeof(*p->stacks), by_frames);
	for (size_t i = 0; i < p->n; i++) {
		if (out && by_frames(&p->stacks[out - 1], &p->stacks[i]) == 0) {
			p->stacks[out - 1].samples += p->stacks[i].samples;
			p->stacks[out - 1].weight += p->stacks[i].weight;
			free(p->stacks[i].frames);
			free(p->stacks[i].process);
		} else {
			p->stacks[out++] = p->stacks[i];
		}
	}
	p->n = out;
	p->merged = true;
}

void sqp_profile_free(struct sqp_profile *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->stacks[i].frames);
		free(p->stacks[i].process);
	}
	free(p->stacks);
	memset(p, 0, sizeof(*p));
}

uint64_t sqp_total_weight(const struct sqp_profile *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < p->n; i++)
		sum += p->stacks[i].weight;
	return sum;
}

uint64_t sqp_total_samples(const struct sqp_profile *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < p->n; i++)
		sum += p->stacks[i].samples;
	return sum;
}

int sqp_read_folded(FILE *f, const char *name, struct sqp_profile *p)
{
	char *line = NULL, *space, *end;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0;
	int err = 0;

	while ((len = getline(&line, &cap, f)) >= 0) {
		unsigned long long count;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0 || line[0] == '#')
			continue;
		space = strrchr(line, ' ');
		errno = 0;
		count = space ? strtoull(space + 1, &end, 10) : 0;
		if (!space || space == line || errno || *end || end == space + 1) {
			fprintf(stderr, "sqprof: %s:%ld: not a folded stack (\"frame;frame;frame count\")\n",
				name, lineno);
			err = -1;
			break;
		}
		*space = 0;
		if (sqp_profile_add(p, line, count, count)) {
			err = -1;
			break;
		}
	}
	free(line);
	if (!err && ferror(f)) {
		fprintf(stderr, "sqprof: reading %s: %s\n", name, strerror(errno));
		err = -1;
	}
	return err;
}

/* ===================================================================== */
/* Methods: self and total                                               */
/* ===================================================================== */

bool sqp_is_method_frame(const char *frame, size_t len)
{
	return memmem(frame, len, ">>", 2) != NULL;
}

struct method {
	const char *name;	/* the table's copy (sqintern.h) */
	uint64_t self, total;
	size_t last;		/* the stack that last counted it in total, plus one */
};

/* The methods of a profile: one row for each name in names, under the same index. */
struct methods {
	struct sq_intern names;
	struct method *rows;
	size_t cap;
};

/* Room for 1,024 rows at first, twice as many when full; -ENOMEM. */
static int methods_grow(struct methods *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024;
	struct method *rows = realloc(t->rows, cap * sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	memset(rows + t->cap, 0, (cap - t->cap) * sizeof(*rows));
	t->rows = rows;
	t->cap = cap;
	return 0;
}

/* The row of the method name[0..len), added if new; NULL when out of memory. */
static struct method *method_find(struct methods *t, const char *name, size_t len)
{
	size_t k = sq_intern(&t->names, name, len);

	if (k == (size_t)-1 || (k >= t->cap && methods_grow(t)))
		return NULL;
	t->rows[k].name = t->names.names[k];
	return &t->rows[k];
}

static void methods_free(struct methods *t)
{
	sq_intern_free(&t->names);
	free(t->rows);
}

/* Self and total weight of every method: self goes to a stack's innermost method, total
 * once to each method on it (a recursive method counts once per sample). A stack with no
 * method at all counts as [VM]. The rows are t->rows[0 .. t->names.n); -ENOMEM. */
static int method_table(struct sqp_profile *p, struct methods *t)
{
	if (methods_grow(t))
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		const char *s = p->stacks[i].frames, *end, *inner = SQP_NO_FRAME;
		size_t inner_len = strlen(SQP_NO_FRAME);
		struct method *m;

		/* (pointers to rows last only until the next method_find: they may move) */
		for (; *s; s = *end ? end + 1 : end) {
			end = strchrnul(s, ';');
			if (!sqp_is_method_frame(s, end - s))
				continue;
			m = method_find(t, s, end - s);
			if (!m)
				return -ENOMEM;
			if (m->last != i + 1) {
				m->total += p->stacks[i].weight;
				m->last = i + 1;
			}
			inner = s;
			inner_len = end - s;
		}
		m = method_find(t, inner, inner_len);
		if (!m)
			return -ENOMEM;
		if (m->last != i + 1) {		/* [VM]: no method on the stack */
			m->total += p->stacks[i].weight;
			m->last = i + 1;
		}
		m->self += p->stacks[i].weight;
	}
	return 0;
}

static int by_self(const void *pa, const void *pb)
{
	const struct method *a = pa, *b = pb;

	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int by_total(const void *pa, const void *pb)
{
	const struct method *a = pa, *b = pb;

	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return by_self(pa, pb);
}

/* ===================================================================== */
/* Reports                                                               */
/* ===================================================================== */

/* The end of the run of stacks from i on with the same frames (merged: side by side), and
 * their summed samples and weight: one stack to the reports that show no labels. */
static size_t same_frames(const struct sqp_profile *p, size_t i, uint64_t *samples, uint64_t *weight)
{
	size_t j = i;

	*samples = *weight = 0;
	for (; j < p->n && strcmp(p->stacks[j].frames, p->stacks[i].frames) == 0; j++) {
		*samples += p->stacks[j].samples;
		*weight += p->stacks[j].weight;
	}
	return j;
}

void sqp_print_folded(FILE *f, struct sqp_profile *p)
{
	uint64_t samples, weight;

	sqp_profile_merge(p);
	for (size_t i = 0, j; i < p->n; i = j) {
		j = same_frames(p, i, &samples, &weight);
		fprintf(f, "%s %llu\n", p->stacks[i].frames, (unsigned long long)weight);
	}
	fflush(f);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

/* "PID 42, CPU at 999 Hz for 1.00 s: 998 samples, 0 truncated (--max-depth 127), 0 lost" */
static void print_summary(FILE *f, struct sqp_profile *p, const struct sqp_info *info)
{
	uint64_t samples = sqp_total_samples(p), weight = sqp_total_weight(p);

	if (info->from_file) {
		fprintf(f, "%s: %llu %s in %zu stacks, %llu truncated\n", info->input,
			(unsigned long long)weight, info->alloc ? "bytes" : "samples", p->n,
			(unsigned long long)info->truncated);
		return;
	}
	if (info->pid)
		fprintf(f, "PID %d", info->pid);
	else
		fprintf(f, "%d VM%s", info->nvms, info->nvms == 1 ? "" : "s");
	if (info->alloc)
		fprintf(f, ", allocations for %.2f s: %llu samples of %llu bytes", info->seconds,
			(unsigned long long)samples, (unsigned long long)weight);
	else if (info->wall)
		fprintf(f, ", wall clock at %ld Hz for %.2f s: %llu ticks, %llu samples of every process",
			info->hz, info->seconds, (unsigned long long)info->wall_ticks, (unsigned long long)samples);
	else
		fprintf(f, ", CPU at %ld Hz for %.2f s: %llu samples", info->hz, info->seconds,
			(unsigned long long)samples);
	fprintf(f, ", %llu truncated (--max-depth %u), %llu lost, %llu inconsistent\n",
		(unsigned long long)info->truncated, info->max_depth, (unsigned long long)info->lost,
		(unsigned long long)info->inconsistent);
	if (info->inconsistent)
		fprintf(f, "Dropped %llu inconsistent samples: a frame outside its process's stack, or "
			"not below its callee.\n", (unsigned long long)info->inconsistent);
	if (info->truncated)
		fprintf(f, "Truncated samples were deeper than %u frames: they are kept under %s, "
			"their outermost frames missing.\n", info->max_depth, SQP_TRUNCATED);
	if (info->lost)
		fprintf(f, "Lost %llu samples (%llu %s): the kernel's stack map was full.\n",
			(unsigned long long)info->lost, (unsigned long long)info->lost_weight,
			info->alloc ? "bytes" : "samples");
	if (info->wall_missed)
		fprintf(f, "Missed %llu tick%s: the tool was late for %s.\n", (unsigned long long)info->wall_missed,
			info->wall_missed == 1 ? "" : "s", info->wall_missed == 1 ? "it" : "them");
	if (info->unknown)
		fprintf(f, "Missed %llu samples of VMs that started after the last scan.\n",
			(unsigned long long)info->unknown);
	if (info->unresolved)
		fprintf(f, "%llu frames could not be named (shown as addresses).\n",
			(unsigned long long)info->unresolved);
}

/* --wall: samples by green process and state (each stack's first two frames). */
struct wall_row {
	char *process, *state;
	uint64_t samples;
};

static int by_process_then_samples(const void *a, const void *b)
{
	const struct wall_row *x = a, *y = b;
	int c = strcmp(x->process, y->process);

	return c ? c : x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : strcmp(x->state, y->state);
}

static void print_wall_states(FILE *f, const struct sqp_profile *p)
{
	struct wall_row *rows = calloc(p->n ? p->n : 1, sizeof(*rows));
	size_t n = 0, i, k;
	uint64_t total = sqp_total_samples(p);

	for (i = 0; rows && i < p->n; i++) {
		const char *fr = p->stacks[i].frames, *a = strchr(fr, ';'), *b = a ? strchr(a + 1, ';') : NULL;
		size_t plen = a ? (size_t)(a - fr) : strlen(fr), slen = a ? (b ? (size_t)(b - a - 1) : strlen(a + 1)) : 0;
		for (k = 0; k < n; k++)
			if (strlen(rows[k].process) == plen && !strncmp(rows[k].process, fr, plen) &&
			    strlen(rows[k].state) == slen && !strncmp(rows[k].state, a + 1, slen))
				break;
		if (k == n) {
			rows[n].process = strndup(fr, plen);
			rows[n].state = strndup(a ? a + 1 : "", slen);
			n++;
		}
		rows[k].samples += p->stacks[i].samples;
	}
	if (!rows)
		return;
	qsort(rows, n, sizeof(*rows), by_process_then_samples);
	fprintf(f, "\n%8s %7s  %-10s %s\n", "SAMPLES", "%", "STATE", "PROCESS");
	for (i = 0; i < n; i++) {
		fprintf(f, "%8llu %6.2f%%  %-10s %s\n", (unsigned long long)rows[i].samples,
			pct(rows[i].samples, total), sq_printable(rows[i].state ? rows[i].state : ""),
			sq_printable(rows[i].process ? rows[i].process : ""));
		free(rows[i].process);
		free(rows[i].state);
	}
	free(rows);
}

void sqp_print_table(FILE *f, struct sqp_profile *p, const struct sqp_info *info)
{
	uint64_t weight;
	struct methods t = { 0 };
	struct method *rows;
	size_t n, shown;
	int w = info->alloc ? 12 : 8;

	sqp_profile_merge(p);
	weight = sqp_total_weight(p);
	print_summary(f, p, info);
	if (info->wall)
		print_wall_states(f, p);
	if (method_table(p, &t)) {
		fprintf(stderr, "sqprof: out of memory\n");
		methods_free(&t);
		return;
	}
	rows = t.rows;
	n = t.names.n;
	qsort(rows, n, sizeof(*rows), info->sort_total ? by_total : by_self);
	shown = info->top > 0 && (size_t)info->top < n ? (size_t)info->top : n;
	fprintf(f, "\n%*s %7s %*s %7s  %s\n", w, info->alloc ? "SELF-B" : "SELF", "SELF%", w,
		info->alloc ? "TOTAL-B" : "TOTAL", "TOTAL%", "METHOD");
	for (size_t i = 0; i < shown; i++)
		fprintf(f, "%*llu %6.2f%% %*llu %6.2f%%  %s\n", w, (unsigned long long)rows[i].self,
			pct(rows[i].self, weight), w, (unsigned long long)rows[i].total,
			pct(rows[i].total, weight), rows[i].name);
	if (shown < n)
		fprintf(f, "... %zu more method%s (the top %zu by %s shown; -n 0 shows all)\n",
			n - shown, n - shown == 1 ? "" : "s", shown, info->sort_total ? "total" : "self");
	methods_free(&t);
	fflush(f);
}

/* The frames of a folded stack as a JSON array, outermost first. */
static void json_frames(FILE *f, const char *s)
{
	char *copy = strdup(s), *frame, *save = NULL;
	bool first = true;

	fputc('[', f);
	for (frame = copy ? strtok_r(copy, ";", &save) : NULL; frame;
	     frame = strtok_r(NULL, ";", &save)) {
		if (!first)
			fputc(',', f);
		sq_json_str(f, frame);
		first = false;
	}
	fputc(']', f);
	free(copy);
}

void sqp_print_json(FILE *f, struct sqp_profile *p, const struct sqp_info *info)
{
	struct methods t = { 0 };
	struct method *rows;
	size_t n, shown;

	sqp_profile_merge(p);
	n = method_table(p, &t) ? 0 : t.names.n;	/* out of memory: no methods */
	rows = t.rows;
	if (n)
		qsort(rows, n, sizeof(*rows), info->sort_total ? by_total : by_self);
	shown = info->top > 0 && (size_t)info->top < n ? (size_t)info->top : n;
	fprintf(f, "{\"mode\":\"%s\",\"unit\":\"%s\",\"pid\":", info->alloc ? "alloc" : info->wall ? "wall" : "cpu",
		info->alloc ? "bytes" : "samples");
	if (info->pid)
		fprintf(f, "%d", info->pid);
	else
		fprintf(f, "null");
	if (info->from_file) {
		fprintf(f, ",\"input\":");
		sq_json_str(f, info->input);
	} else {
		fprintf(f, ",\"vms\":%d,\"hz\":%ld,\"seconds\":%.3f,\"max_depth\":%u", info->nvms,
			info->alloc ? 0 : info->hz, info->seconds, info->max_depth);
		if (info->wall)
			fprintf(f, ",\"ticks\":%llu,\"missed_ticks\":%llu", (unsigned long long)info->wall_ticks,
				(unsigned long long)info->wall_missed);
	}
	fprintf(f, ",\"samples\":%llu,\"weight\":%llu,\"truncated\":%llu,\"lost\":%llu,"
		"\"lost_weight\":%llu,\"unknown\":%llu,\"unresolved\":%llu,\"inconsistent\":%llu,\"methods\":[",
		(unsigned long long)sqp_total_samples(p), (unsigned long long)sqp_total_weight(p),
		(unsigned long long)info->truncated, (unsigned long long)info->lost,
		(unsigned long long)info->lost_weight, (unsigned long long)info->unknown,
		(unsigned long long)info->unresolved, (unsigned long long)info->inconsistent);
	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "%s{\"method\":", i ? "," : "");
		sq_json_str(f, rows[i].name);
		fprintf(f, ",\"self\":%llu,\"total\":%llu}", (unsigned long long)rows[i].self,
			(unsigned long long)rows[i].total);
	}
	fprintf(f, "],\"stacks\":[");
	for (size_t i = 0, j; i < p->n; i = j) {
		uint64_t samples, weight;
		j = same_frames(p, i, &samples, &weight);
		fprintf(f, "%s{\"frames\":", i ? "," : "");
		json_frames(f, p->stacks[i].frames);
		fprintf(f, ",\"samples\":%llu,\"weight\":%llu}", (unsigned long long)samples,
			(unsigned long long)weight);
	}
	fprintf(f, "]}\n");
	methods_free(&t);
	fflush(f);
}
