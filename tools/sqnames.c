// SPDX-License-Identifier: BSD-2-Clause
/* sqnames.c - full names of VM processes by address; see sqnames.h. */
#define _GNU_SOURCE
#include "sqnames.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "sqcommon.h"
#include "sqmem.h"

struct entry {
	bool used;
	bool complete;
	pid_t pid;
	__u64 addr;
	char *name;		/* NULL: nothing is known of it */
};

static struct entry *table;
static size_t cap, used;
static __u64 unknown;

static size_t slot_of(pid_t pid, __u64 addr, size_t mask)
{
	__u64 h = (addr ^ ((__u64)pid << 40)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 17) & mask;
}

/* The table moved into one of ncap slots, without the entries of pid skip (0: none). */
static bool rehash(size_t ncap, pid_t skip)
{
	struct entry *n = calloc(ncap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < cap; i++) {
		if (!table[i].used)
			continue;
		if (skip && table[i].pid == skip) {
			free(table[i].name);
			used--;
			continue;
		}
		size_t j = slot_of(table[i].pid, table[i].addr, ncap - 1);
		while (n[j].used)
			j = (j + 1) & (ncap - 1);
		n[j] = table[i];
	}
	free(table);
	table = n;
	cap = ncap;
	return true;
}

static bool grow(void)
{
	return rehash(cap ? 2 * cap : 1024, 0);
}

static struct entry *find(pid_t pid, __u64 addr)
{
	if (!cap)
		return NULL;
	for (size_t i = slot_of(pid, addr, cap - 1); table[i].used; i = (i + 1) & (cap - 1))
		if (table[i].pid == pid && table[i].addr == addr)
			return &table[i];
	return NULL;
}

#define NO_READ (-2)

/* The name of (pid, addr) read now: the copy if it holds the whole name; else the
 * string at addr (ptr_off -1), or the string addr + ptr_off points to (ptr_off >= 0),
 * or nothing (NO_READ); else the copy with "..."; else NULL. */
static char *read_name(pid_t pid, __u64 addr, int ptr_off, const char *copy, size_t copy_len,
		       bool *complete)
{
	char buf[SQ_FULL_NAME_MAX];
	size_t plen = copy ? strnlen(copy, copy_len) : 0;
	__u64 str = addr;
	int n = -1;

	*complete = true;
	if (copy && plen + 1 < copy_len)	/* room to spare: the whole name */
		return strdup(copy);
	if (ptr_off == -1 || (ptr_off >= 0 && sq_read_mem(pid, addr + (__u64)ptr_off, &str, sizeof(str))))
		n = sq_read_str(pid, str, buf, sizeof(buf));
	if (n == -2) {
		*complete = false;
		strcpy(buf + sizeof(buf) - 4, "...");
	} else if (n < 0 || (copy && strncmp(buf, copy, plen) != 0)) {
		/* gone (or not what the kernel saw): the copy is all there is */
		*complete = false;
		if (!plen)
			return NULL;
		snprintf(buf, sizeof(buf), "%.*s...", (int)plen, copy);
	}
	return strdup(buf);
}

/* The cached name of (pid, addr), or a new entry read from the process. */
static const char *lookup(pid_t pid, __u64 addr, int ptr_off, const char *copy, size_t copy_len,
			  bool *complete)
{
	struct entry *e = find(pid, addr);
	size_t i;

	if (e) {
		*complete = e->complete;
		return e->name;
	}
	if (used == SQ_NAMES_MAX || ((used + 1) * 2 > cap && !grow())) {
		*complete = false;
		unknown++;
		return NULL;
	}
	for (i = slot_of(pid, addr, cap - 1); table[i].used; i = (i + 1) & (cap - 1))
		;
	e = &table[i];
	*e = (struct entry){ .used = true, .pid = pid, .addr = addr };
	e->name = read_name(pid, addr, ptr_off, copy, copy_len, &e->complete);
	if (!e->name) {
		e->complete = false;
		unknown++;
	}
	used++;
	*complete = e->complete;
	return e->name;
}

const char *sq_name(pid_t pid, __u64 addr, const char *copy, size_t copy_len, bool *complete)
{
	bool c;

	if (!addr) {
		if (complete)
			*complete = true;
		return copy ? copy : "";
	}
	return lookup(pid, addr, -1, copy, copy_len, complete ? complete : &c);
}

const char *sq_method_name(pid_t pid, __u64 method, int print_name_off, const char *copy,
			   size_t copy_len, bool *complete)
{
	bool c;

	return lookup(pid, method, print_name_off < 0 ? NO_READ : print_name_off, copy, copy_len,
		      complete ? complete : &c);
}

/* The BPF side's copy of (pid, addr), into copy; false if it has none. */
static bool map_copy(int names_fd, pid_t pid, __u64 addr, struct sq_name_copy *copy)
{
	struct sq_name_key k = { .pid = (__u32)pid, .addr = addr };

	if (bpf_map_lookup_elem(names_fd, &k, copy) != 0)
		return false;
	copy->name[sizeof(copy->name) - 1] = 0;
	return true;
}

const char *sq_map_name_or(int names_fd, pid_t pid, __u64 addr, const char *fallback, size_t fallback_len,
			   bool *complete)
{
	struct sq_name_copy copy;
	bool have, c;

	if (!addr)
		return sq_name(pid, addr, fallback, fallback_len, complete);
	have = find(pid, addr) == NULL && map_copy(names_fd, pid, addr, &copy);
	return lookup(pid, addr, -1, have ? copy.name : fallback, have ? sizeof(copy.name) : fallback_len,
		      complete ? complete : &c);
}

const char *sq_map_name(int names_fd, pid_t pid, __u64 addr, bool *complete)
{
	return sq_map_name_or(names_fd, pid, addr, NULL, 0, complete);
}

const char *sq_map_method_name(int names_fd, int vms_fd, pid_t pid, __u64 method, bool *complete)
{
	struct sq_name_copy copy;
	struct sq_vm_offsets o;
	__u32 key = (__u32)pid;
	bool have;
	int off;

	if (find(pid, method))		/* cached: no map lookups */
		return sq_method_name(pid, method, -1, NULL, 0, complete);
	have = map_copy(names_fd, pid, method, &copy);
	off = bpf_map_lookup_elem(vms_fd, &key, &o) == 0 ? (int)o.method_print_name : -1;
	return sq_method_name(pid, method, off, have ? copy.name : NULL, sizeof(copy.name), complete);
}

void sq_prefix_set(char *dst, __u32 *len, const char *prefix)
{
	if (!prefix)
		return;
	*len = strnlen(prefix, SQ_NAME_LEN - 1);
	memcpy(dst, prefix, *len);
	dst[*len] = 0;
}

bool sq_has_name_prefix(const char *name, const char *prefix)
{
	return !prefix || strncmp(name, prefix, strlen(prefix)) == 0;
}

__u64 sq_names_unknown(void)
{
	return unknown;
}

void sq_names_each(void (*fn)(void *ctx, pid_t pid, __u64 addr, const char *name), void *ctx)
{
	for (size_t i = 0; i < cap; i++)
		if (table[i].used && table[i].name)
			fn(ctx, table[i].pid, table[i].addr, table[i].name);
}

void sq_names_forget(pid_t pid)
{
	if (cap && pid)
		rehash(cap, pid);	/* out of memory: they stay, as they would have */
}

void sq_names_free(void)
{
	for (size_t i = 0; i < cap; i++)
		free(table[i].name);
	free(table);
	table = NULL;
	cap = used = 0;
	unknown = 0;
}
