/* sqnames.c - full names of VM processes by address; see sqnames.h. */
#define _GNU_SOURCE
#include "sqnames.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqvm_proc.h"

struct entry {
	pid_t pid;
	__u64 addr;
	char *name;
	bool complete;
};

static struct entry *table;
static size_t cap, used;

static size_t slot_of(pid_t pid, __u64 addr, size_t mask)
{
	__u64 h = (addr ^ ((__u64)pid << 40)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 17) & mask;
}

static bool grow(void)
{
	size_t ncap = cap ? 2 * cap : 1024;
	struct entry *n = calloc(ncap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < cap; i++) {
		if (!table[i].name)
			continue;
		size_t j = slot_of(table[i].pid, table[i].addr, ncap - 1);
		while (n[j].name)
			j = (j + 1) & (ncap - 1);
		n[j] = table[i];
	}
	free(table);
	table = n;
	cap = ncap;
	return true;
}

const char *sq_name(pid_t pid, __u64 addr, const char *prefix, size_t prefix_len, bool *complete)
{
	char buf[SQ_FULL_NAME_MAX];
	size_t i, plen = strnlen(prefix, prefix_len);
	int n;

	/* A prefix with room to spare is the whole name. */
	if (plen + 1 < prefix_len || !addr) {
		if (complete)
			*complete = true;
		return prefix;
	}
	if (cap) {
		for (i = slot_of(pid, addr, cap - 1); table[i].name; i = (i + 1) & (cap - 1))
			if (table[i].pid == pid && table[i].addr == addr) {
				if (complete)
					*complete = table[i].complete;
				return table[i].name;
			}
	}
	if ((used + 1) * 2 > cap && !grow()) {
		if (complete)
			*complete = false;
		return prefix;
	}
	n = sq_read_str(pid, addr, buf, sizeof(buf));
	struct entry e = { .pid = pid, .addr = addr, .complete = n >= 0 };
	if (n == -2)
		strcpy(buf + sizeof(buf) - 4, "...");
	else if (n < 0 || strncmp(buf, prefix, plen) != 0)
		snprintf(buf, sizeof(buf), "%.*s...", (int)plen, prefix), e.complete = false;
	if (!(e.name = strdup(buf))) {
		if (complete)
			*complete = false;
		return prefix;
	}
	for (i = slot_of(pid, addr, cap - 1); table[i].name; i = (i + 1) & (cap - 1))
		;
	table[i] = e;
	used++;
	if (complete)
		*complete = e.complete;
	return e.name;
}

void sq_names_free(void)
{
	for (size_t i = 0; i < cap; i++)
		free(table[i].name);
	free(table);
	table = NULL;
	cap = used = 0;
}
