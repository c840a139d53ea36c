// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqrequest.bpf.h - how the tools that time requests (sqreq, sqflow, sqstat's exporter) pair
 * request__begin with request__end, so that they count the same requests:
 *
 *   - a green process has at most one request open: one begun while its process has
 *     one open is not followed (counted in nested);
 *   - request__end (from any process; it names the owner) closes the owner's open
 *     request if it has that id; an end with no open request is of a request begun
 *     before tracing did (counted in unseen), one with another id is not followed;
 *   - process__exit forgets the process's open request (request__end with status -1
 *     fired first, so this only matters to a request the tool never saw end).
 *
 * The table of open requests is the tool's own (each keeps what it needs of a request,
 * its value beginning with struct sq_request): a hash map keyed by struct
 * sq_request_key (sq_request_may_begin, sq_request_ending), or any table the tool looks
 * the owner up in first (sq_request_may_open, sq_request_end_of). */
#ifndef SQREQUEST_BPF_H
#define SQREQUEST_BPF_H

#include "sqvm.bpf.h"

struct sq_request_key {
	__u32 pid;
	__u32 pad;
	__u64 process;		/* the owner's id (the process probes') */
};

struct sq_request {
	__u64 id;		/* request__begin's id: 1, 2, ... per VM */
	__u64 route;		/* the address of its interned name */
	__u64 begin_ns;
};

static __always_inline struct sq_request_key sq_request_key(__u32 pid, __u64 process)
{
	struct sq_request_key k = { .pid = pid, .process = process };

	return k;
}

/* The rules, on what a tool found for the owner (its open request, or NULL: none),
 * whatever table it keeps them in (sqreq: a slot table, bpf/sqslots.bpf.h). */

/* request__begin in a process whose open request is open (NULL: none): may it open
 * one? False (counted in *nested) if it has one open already. */
static __always_inline bool sq_request_may_open(const void *open, __u64 *nested)
{
	if (!open)
		return true;
	__sync_fetch_and_add(nested, 1);
	return false;
}

/* request__end of request id whose owner has open request r (NULL: none): r if it is
 * the one that ends, else NULL: none open (counted in *unseen), or another one. */
static __always_inline void *sq_request_end_of(struct sq_request *r, __u64 id, __u64 *unseen)
{
	if (!r) {
		__sync_fetch_and_add(unseen, 1);
		return NULL;
	}
	return r->id == id ? r : NULL;
}

/* The same rules on a hash map of open requests (sqstat's exporter, sqflow). */

/* request__begin in process k: may it open one? */
static __always_inline bool sq_request_may_begin(void *open, const struct sq_request_key *k, __u64 *nested)
{
	return sq_request_may_open(bpf_map_lookup_elem(open, k), nested);
}

/* request__end of request id owned by process k: the open request it ends (the map's
 * value, which begins with struct sq_request), or NULL. The caller deletes it when
 * done with it. */
static __always_inline void *sq_request_ending(void *open, const struct sq_request_key *k, __u64 id, __u64 *unseen)
{
	return sq_request_end_of(bpf_map_lookup_elem(open, k), id, unseen);
}

#endif
