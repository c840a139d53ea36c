#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# fuzz/ring_image.py - writes fuzz_ring's inputs (the layout: fuzz/fuzz_ring.c): the three
# heads a reader sees, then a VM's record ring (probes/record_ring.h) with a few batches
# of a small server's history: a process named, a request that waits on a Semaphore
# another process holds and signals, one that runs whole, an I/O call and an allocation
# sample; as the seeds of fuzz/seeds/ring/. The sizes are read from the headers, so that a
# change there shows here.
#
#   fuzz/ring_image.py          rewrite fuzz/seeds/ring/*
import os
import re
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def define(header, name):
    text = open(os.path.join(ROOT, "probes", header)).read()
    return int(re.search(r"#define %s (\S+)" % name, text).group(1).rstrip("ULul"), 0)


MAGIC = define("record_ring.h", "SQ_RING_MAGIC")
SLOTS = define("record_ring.h", "SQ_RING_SLOTS")
NAMES = define("record_ring.h", "SQ_RING_NAMES")
NAME_LEN = define("record_ring.h", "SQ_RING_NAME_LEN")
BATCH_MAX = define("event_batch.h", "SQ_BATCH_MAX")
RECORD = 72
SLOT = 24 + (8 + NAME_LEN) * NAMES + RECORD * BATCH_MAX
KINDS = dict(ACTIVATE=6, READY=7, WAIT=8, CREATE=9, EXIT=10, IO_WAIT=11, IO_READY=12,
             BEGIN=13, END=14, IO=15, FRAMES=16, RUN=17, TRACE=18, SAMPLE=19)
METHOD = 0x7f0000001000
NAME_PTR = 0x7f0000002000


def record(kind, arg, ts, *words):
    words = list(words) + [0] * (7 - len(words))
    return struct.pack("<IIQ7Q", KINDS[kind], arg, ts, *words)


def slot(seq, flush_ns, records, names=()):
    out = struct.pack("<QQII", seq, flush_ns, len(records), len(names))
    for pid, name in names:
        out += struct.pack("<Q", pid) + name.encode().ljust(NAME_LEN, b"\0")[:NAME_LEN]
    out += b"\0" * ((8 + NAME_LEN) * (NAMES - len(names)))
    return out + b"".join(records)   # the rest of the slot: zeros (the image's)


def ring(head, slots):
    """The ring's memory up to the end of its last slot given (the rest reads as zeros)."""
    out = bytearray(struct.pack("<QIIQ", MAGIC, SLOTS, SLOT, head) + b"\0" * 40)
    for i, s in enumerate(slots):
        pad = 64 + i * SLOT - len(out)
        out += b"\0" * pad + s
    return bytes(out)


def history(t0):
    """Three batches: a Semaphore wait held by a refresher, a whole request, I/O."""
    ms = 1000000
    b1 = [record("CREATE", 4, t0, 2, 0, 0, NAME_PTR),
          record("ACTIVATE", 4, t0 + 1 * ms, 1, 0, 0, NAME_PTR),
          record("BEGIN", 0, t0 + 2 * ms, 81, 0x7f0000003000, 1),
          record("WAIT", 2, t0 + 3 * ms, 1, 0xabc, 0, NAME_PTR, 0, 0, METHOD),
          record("ACTIVATE", 4, t0 + 3 * ms, 2, 0, 0, NAME_PTR)]
    b2 = [record("READY", 1, t0 + 33 * ms, 1, 0, 0, NAME_PTR, 0, 0, METHOD + 64),
          record("ACTIVATE", 4, t0 + 34 * ms, 1, 0, 0, NAME_PTR),
          record("END", 200, t0 + 35 * ms, 81, 0x7f0000003000, 1),
          record("TRACE", 1, t0 + 36 * ms, 82, 1, 2, 3, 4, 1),
          record("RUN", 200, t0 + 37 * ms, 82, 0x7f0000003000, 1, t0 + 36 * ms, 10, 640)]
    b3 = [record("IO", 0 | 1 << 8, t0 + 40 * ms, 1, 7, 64, 20000, METHOD, METHOD + 64, METHOD + 128),
          record("FRAMES", 3 | 1 << 8, t0 + 40 * ms, METHOD + 192, 0, 0, 0, 0, 0),
          record("IO_WAIT", 0, t0 + 41 * ms, 1, 7, 0, NAME_PTR),
          record("IO_READY", 0, t0 + 45 * ms, 1, 7, 0, NAME_PTR, 0, 0, t0 + 41 * ms),
          record("SAMPLE", 0, t0 + 46 * ms, NAME_PTR, 4096, NAME_PTR, NAME_PTR, 65536, 1, METHOD),
          record("EXIT", 0, t0 + 47 * ms, 2, 0, 0, NAME_PTR)]
    return [(b1, t0 + 3 * ms, [(1, "handler"), (2, "refresher")]), (b2, t0 + 37 * ms, []), (b3, t0 + 47 * ms, [])]


def write(name, heads, image):
    with open(os.path.join(ROOT, "fuzz/seeds/ring", name), "wb") as f:
        f.write(struct.pack("<3Q", *heads) + image)


def main():
    t0 = 10 ** 12
    batches = history(t0)
    slots = [slot(i, flush, recs, names) for i, (recs, flush, names) in enumerate(batches)]
    # read as it grows: none, then one, then all three
    write("three-batches.img", (0, 1, 3), ring(3, slots))
    # a reader that starts late: the first poll already sees three
    write("late-start.img", (3, 3, 3), ring(3, slots))
    # the head leaps past the ring and back; a slot whose seq is another batch's
    lying = [slots[0], slot(7, t0, [record("ACTIVATE", 0, t0, 1, 0, 0, NAME_PTR)]), slots[2]]
    write("leap-and-bad-seq.img", (1, 1 << 63, 3), ring(3, lying))
    # a slot that says it holds more records and names than it has room for
    over = struct.pack("<QQII", 0, t0, 0xffffffff, 0xffffffff)
    write("counts-past-the-slot.img", (0, 1, 1), ring(1, [over]))


if __name__ == "__main__":
    main()
