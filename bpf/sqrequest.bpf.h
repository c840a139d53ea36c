// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqrequest.bpf.h - how the tools that time requests (sqreq, sqstat's exporter) pair
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
 * The map of open requests is the tool's own (each keeps what it needs of a request):
 * keyed by struct sq_request_key, its value begins with struct sq_request. */
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

/* request__begin in process k: may it open one? False (counted in *nested) if it has a
 * request open already. */
static __always_inline bool sq_request_may_begin(void *open, const struct sq_request_key *k, __u64 *nested)
{
	if (!bpf_map_lookup_elem(open, k))
		return true;
	__sync_fetch_and_add(nested, 1);
	return false;
}

/* request__end of request id owned by process k: the open request it ends (the map's
 * value, which begins with struct sq_request), or NULL: none open (counted in
 * *unseen), or another one. The caller deletes it when done with it. */
static __always_inline void *sq_request_ending(void *open, const struct sq_request_key *k, __u64 id, __u64 *unseen)
{
	struct sq_request *r = bpf_map_lookup_elem(open, k);

	if (!r) {
		__sync_fetch_and_add(unseen, 1);
		return NULL;
	}
	return r->id == id ? r : NULL;
}

#endif
