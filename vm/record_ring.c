// SPDX-License-Identifier: BSD-2-Clause
/* record_ring.c - the record ring's writer (probes/record_ring.h; record.h declares it). A slot costs the VM a copy of
 * the batch (the buffer is hot; the slot is not) and, for each activation of a process
 * whose name it has not sent lately, a copy of the name: against a uprobe hit and the
 * kernel's copy of the batch, about 7 us a batch in a VM guest, for a reader that takes
 * every batch (sqslow). */
#include "record.h"
#include "record_ring.h"

#include <string.h>

#if SQVM_PROBES

/* In .bss (5 MiB that cost nothing until a tool turns the ring on), so its header is
 * filled in at start rather than by an initialiser, which would put the whole ring in the
 * executable. */
SqRecordRing sq_record_ring;

__attribute__((constructor)) static void record_ring_init(void)
{
    sq_record_ring.magic = SQ_RING_MAGIC;
    sq_record_ring.slots = SQ_RING_SLOTS;
    sq_record_ring.slot_size = sizeof(SqRingSlot);
}

/* The processes whose names went out lately, direct-mapped by id (id + 1; 0: empty). It
 * is forgotten every second, so that a reader that attaches later, or lost a slot, learns
 * every running process's name within about a second. */
#define NAMED_SLOTS 256
#define NAMED_FOR_NS 1000000000ull
static uint64_t named[NAMED_SLOTS];
static uint64_t namedSince;

static void add_names(SqRingSlot *s, const SqEventRecord *rec, uint32_t n, uint64_t now)
{
    if (now - namedSince > NAMED_FOR_NS) {
        memset(named, 0, sizeof named);
        namedSince = now;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < SQ_RING_NAMES; i++) {
        if (rec[i].kind != SQ_EV_PROCESS_ACTIVATE || !rec[i].process.name) continue;
        uint64_t id = rec[i].process.id, *seen = &named[id % NAMED_SLOTS];
        if (*seen == id + 1) continue;
        *seen = id + 1;
        /* the name is a String's bytes, NUL-terminated, and good until the next collection:
         * the buffer is flushed before one can move it */
        const char *name = (const char *)(uintptr_t)rec[i].process.name;
        size_t len = strnlen(name, SQ_RING_NAME_LEN - 1);
        s->names[k].id = id;
        memcpy(s->names[k].name, name, len);
        s->names[k].name[len] = 0;
        k++;
    }
    s->nnames = k;
}

void record_ring_append(const SqEventRecord *rec, uint32_t n)
{
    uint64_t seq = sq_record_ring.head, now = record_clock();
    SqRingSlot *s = &sq_record_ring.slot[seq % SQ_RING_SLOTS];
    if (n > SQ_BATCH_MAX) n = SQ_BATCH_MAX;
    s->seq = seq;
    s->flush_ns = now;
    s->n = n;
    memcpy(s->rec, rec, n * sizeof(SqEventRecord));
    add_names(s, rec, n, now);
    __atomic_store_n(&sq_record_ring.head, seq + 1, __ATOMIC_RELEASE);
}

#endif
