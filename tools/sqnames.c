// SPDX-License-Identifier: BSD-2-Clause
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

#define NO_READ (-2)

/* The cached name of (pid, addr), or a new entry read from the process: the string at
 * addr (ptr_off -1), or (ptr_off >= 0) the string addr + ptr_off points to, or nothing
 * (NO_READ: only the prefix). */
static const char *lookup(pid_t pid, __u64 addr, int ptr_off, const char *prefix, size_t prefix_len,
			  bool *complete)
{
	char buf[SQ_FULL_NAME_MAX];
	size_t i, plen = prefix ? strnlen(prefix, prefix_len) : 0;
	bool whole = prefix && plen + 1 < prefix_len;	/* room to spare: the whole name */
	struct entry e = { .pid = pid, .addr = addr };
	__u64 str = addr;
	int n = -1;

	if (cap) {
		for (i = slot_of(pid, addr, cap - 1); table[i].name; i = (i + 1) & (cap - 1))
			if (table[i].pid == pid && table[i].addr == addr) {
				*complete = table[i].complete;
				return table[i].name;
			}
	}
	if ((used + 1) * 2 > cap && !grow()) {
		*complete = whole;
		return prefix ? prefix : "?";
	}
	if (whole) {
		snprintf(buf, sizeof(buf), "%s", prefix);
		e.complete = true;
	} else {
		if (ptr_off == -1 || (ptr_off >= 0 && sq_read_mem(pid, addr + (__u64)ptr_off, &str, sizeof(str))))
			n = sq_read_str(pid, str, buf, sizeof(buf));
		e.complete = n >= 0;
		if (n == -2)
			strcpy(buf + sizeof(buf) - 4, "...");
		else if (n < 0 || (prefix && strncmp(buf, prefix, plen) != 0)) {
			/* gone (or not what the kernel saw): the copy is all there is */
			if (plen)
				snprintf(buf, sizeof(buf), "%.*s...", (int)plen, prefix);
			else
				snprintf(buf, sizeof(buf), "?");
			e.complete = false;
		}
	}
	if (!(e.name = strdup(buf))) {
		*complete = false;
		return "?";
	}
	for (i = slot_of(pid, addr, cap - 1); table[i].name; i = (i + 1) & (cap - 1))
		;
	table[i] = e;
	used++;
	*complete = e.complete;
	return e.name;
}

const char *sq_name(pid_t pid, __u64 addr, const char *prefix, size_t prefix_len, bool *complete)
{
	bool c;

	if (!addr) {
		if (complete)
			*complete = true;
		return prefix ? prefix : "";
	}
	return lookup(pid, addr, -1, prefix, prefix_len, complete ? complete : &c);
}

const char *sq_method_name_of(pid_t pid, __u64 method, int print_name_off, const char *prefix,
			      size_t prefix_len, bool *complete)
{
	bool c;

	if (print_name_off < 0 && !prefix) {
		if (complete)
			*complete = false;
		return "?";
	}
	return lookup(pid, method, print_name_off < 0 ? NO_READ : print_name_off, prefix, prefix_len,
		      complete ? complete : &c);
}

void sq_names_free(void)
{
	for (size_t i = 0; i < cap; i++)
		free(table[i].name);
	free(table);
	table = NULL;
	cap = used = 0;
}
