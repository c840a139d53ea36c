// SPDX-License-Identifier: BSD-2-Clause
/* sqsched_sems.c - sqsched's Semaphore table (tools/sqsched_sems.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "sqbpf.h"
#include "sqnames.h"
#include "sqoutput.h"
#include "sqsched.h"
#include "sqsched_sems.h"

struct entry {
	struct sqsched_sem_key k;
	struct sqsched_sem_stats v;
};

static int by_semaphore(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	if (a->k.pid != b->k.pid)
		return a->k.pid < b->k.pid ? -1 : 1;
	return a->k.semaphore < b->k.semaphore ? -1 : a->k.semaphore > b->k.semaphore;
}

/* The key's word at sort_off (a __u64 of struct sqsched_sem_key), for by_word. */
static size_t sort_off;

static __u64 word(const struct entry *e, size_t off)
{
	__u64 w;

	memcpy(&w, (const char *)&e->k + off, sizeof(w));
	return w;
}

static int by_word(const void *pa, const void *pb)
{
	__u64 a = word(pa, sort_off), b = word(pb, sort_off);

	return a < b ? -1 : a > b;
}

/* Among the n rows of one Semaphore, the value of the key's word at off whose rows add
 * up to the most wait time (by_count: the most waits); ties go to the smaller value, and
 * 0 (not known) never wins. Reorders the rows. */
static __u64 heaviest(struct entry *rows, size_t n, size_t off, bool by_count)
{
	__u64 best = 0, best_w = 0;

	sort_off = off;
	qsort(rows, n, sizeof(*rows), by_word);
	for (size_t i = 0, j; i < n; i = j) {
		__u64 v = word(&rows[i], off), w = 0;

		for (j = i; j < n && word(&rows[j], off) == v; j++)
			w += by_count ? rows[j].v.waits : rows[j].v.wait_ns;
		if (v && (best == 0 || w > best_w)) {
			best = v;
			best_w = w;
		}
	}
	return best;
}

static int by_wait(const void *pa, const void *pb)
{
	const struct sqsched_sem *a = pa, *b = pb;

	if (a->wait_ns != b->wait_ns)
		return a->wait_ns < b->wait_ns ? 1 : -1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->semaphore < b->semaphore ? -1 : a->semaphore > b->semaphore;
}

int sqsched_sems_take(int fd, struct sqsched_sem **out, size_t *n)
{
	size_t nkeys, nrows = 0, nsems = 0;
	struct sqsched_sem_key *keys = sq_map_keys(fd, sizeof(*keys), SQSCHED_MAX_SEM_ROWS, &nkeys);
	struct entry *rows = calloc(nkeys ? nkeys : 1, sizeof(*rows));
	struct sqsched_sem *sems = calloc(nkeys ? nkeys : 1, sizeof(*sems));

	if (!keys || !rows || !sems) {
		free(keys);
		free(rows);
		free(sems);
		return -ENOMEM;
	}
	/* taken out one by one: a wait that ends meanwhile makes a new row, for the next */
	for (size_t i = 0; i < nkeys; i++)
		if (!bpf_map_lookup_and_delete_elem(fd, &keys[i], &rows[nrows].v))
			rows[nrows++].k = keys[i];
	free(keys);
	qsort(rows, nrows, sizeof(*rows), by_semaphore);
	for (size_t i = 0, j; i < nrows; i = j) {
		struct sqsched_sem *s = &sems[nsems++];

		for (j = i; j < nrows && !by_semaphore(&rows[i], &rows[j]); j++)
			;
		*s = (struct sqsched_sem){ .pid = rows[i].k.pid, .semaphore = rows[i].k.semaphore };
		for (size_t k = i; k < j; k++) {
			s->waits += rows[k].v.waits;
			s->wait_ns += rows[k].v.wait_ns;
			if (rows[k].v.max_ns > s->max_ns)
				s->max_ns = rows[k].v.max_ns;
		}
		s->method = heaviest(rows + i, j - i, offsetof(struct sqsched_sem_key, method), false);
		s->waiter = heaviest(rows + i, j - i, offsetof(struct sqsched_sem_key, waiter), false);
		s->signaller = heaviest(rows + i, j - i, offsetof(struct sqsched_sem_key, signaller), true);
	}
	free(rows);
	qsort(sems, nsems, sizeof(*sems), by_wait);
	*out = sems;
	*n = nsems;
	return 0;
}

static const char *method_name(const struct sqsched_sem *s, const struct sqsched_sem_names *names)
{
	if (!s->method)
		return NULL;
	return sq_map_method_name(names->names_fd, names->vms_fd, (pid_t)s->pid, s->method, NULL);
}

static const char *process_name(const struct sqsched_sem *s, __u64 id, const struct sqsched_sem_names *names)
{
	return id ? names->process(names->ctx, s->pid, id) : NULL;
}

/* "name (id)", the name cut to 20 columns; "?" for no process. */
static void process_cell(char *buf, size_t size, const struct sqsched_sem *s, __u64 id,
			 const struct sqsched_sem_names *names)
{
	if (!id)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%.20s (%llu)", sq_printable(process_name(s, id, names)),
			 (unsigned long long)id);
}

void sqsched_sems_print_text(FILE *f, const struct sqsched_sem *s, size_t n, size_t shown,
			     const struct sqsched_sem_names *names)
{
	char waiter[48], signaller[48];

	if (!n)
		return;
	fprintf(f, "\nSemaphores: WAITER waited on it longest, SIGNALLER readied its waiters most often\n");
	fprintf(f, "%-7s %10s %8s %11s %10s %-32s %-30s %s\n", "PID", "SEMAPHORE", "WAITS", "WAIT_ms", "MAX_ms",
		"METHOD", "WAITER", "SIGNALLER");
	for (size_t i = 0; i < shown; i++) {
		process_cell(waiter, sizeof(waiter), &s[i], s[i].waiter, names);
		process_cell(signaller, sizeof(signaller), &s[i], s[i].signaller, names);
		fprintf(f, "%-7u %10llu %8llu %11.3f %10.3f %-32.32s %-30s %s\n", s[i].pid,
			(unsigned long long)s[i].semaphore, (unsigned long long)s[i].waits, s[i].wait_ns / 1e6,
			s[i].max_ns / 1e6, sq_printable(method_name(&s[i], names)), waiter, signaller);
	}
	if (shown < n)
		fprintf(f, "... %zu more Semaphore%s (-n 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		sq_json_str(f, s);
	else
		fputs("null", f);
}

void sqsched_sems_print_json(FILE *f, const struct sqsched_sem *s, size_t shown,
			     const struct sqsched_sem_names *names)
{
	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "%s{\"pid\":%u,\"semaphore\":%llu,\"method\":", i ? "," : "", s[i].pid,
			(unsigned long long)s[i].semaphore);
		json_str_or_null(f, method_name(&s[i], names));
		fprintf(f, ",\"waits\":%llu,\"wait_ns\":%llu,\"max_ns\":%llu,\"waiter\":", (unsigned long long)s[i].waits,
			(unsigned long long)s[i].wait_ns, (unsigned long long)s[i].max_ns);
		json_str_or_null(f, process_name(&s[i], s[i].waiter, names));
		fprintf(f, ",\"waiter_id\":%llu,\"signaller\":", (unsigned long long)s[i].waiter);
		json_str_or_null(f, process_name(&s[i], s[i].signaller, names));
		fprintf(f, ",\"signaller_id\":%llu}", (unsigned long long)s[i].signaller);
	}
}
