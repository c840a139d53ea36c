#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# fuzz/flow_stream.py - writes fuzz_flow's inputs (the layout: fuzz/fuzz_flow.c): streams of
# entries and returns as sqflow's BPF side sends them, as the seeds of fuzz/seeds/flow/;
# and the stream a full ring buffer made of a busy VM (a return whose entry was lost,
# under calls still open) for fuzz/regress/flow/.
#
#   fuzz/flow_stream.py          rewrite fuzz/seeds/flow/* and the lost-entry input
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NAME = 10
ENTRY, RETURN, BLOCK, BACK = 0, 1, 2, 0x80


def rec(op, frame, name=b"", process=0, pid=0, thread=0, dt=100):
    return struct.pack("<BBBBH", op, process, frame, pid | thread << 2, dt) + name[:NAME].ljust(NAME, b"\0")


def stream(records, stop=0, before=0):
    return bytes([stop, before]) + b"".join(records)


def calls(names, process=0, pid=0, thread=0):
    """Nested calls, each entered inside the one before, then all returned."""
    out = [rec(ENTRY, i + 1, n, process, pid, thread) for i, n in enumerate(names)]
    out += [rec(RETURN, i + 1, n, process, pid, thread) for i, n in reversed(list(enumerate(names)))]
    return out


SEEDS = {
    "nested.bin": stream(calls([b"Main>>run", b"A>>foo", b"A>>bar"])),
    # returns of calls entered before the trace; a block; a Ctrl-C that ends the window
    "began-before.bin": stream([rec(RETURN, 9, b"Main>>run:"), rec(ENTRY | BLOCK, 3, b"[] in A>>x"),
                                rec(RETURN | BLOCK, 3, b""), rec(RETURN, 8, b"Sys>>init")] +
                               calls([b"A>>open"]), stop=5, before=2),
    # green processes interleaving on one thread, the first not known yet; two VMs
    "processes.bin": stream([rec(ENTRY, 1, b"P>>a"), rec(ENTRY, 2, b"Q>>b", process=5),
                             rec(RETURN, 1, b"P>>a", process=4), rec(RETURN, 2, b"Q>>b", process=5)] +
                            calls([b"R>>c"], process=255, pid=1) + calls([b"R>>c"], process=7, pid=1, thread=1)),
    # names a target chose: escapes, invalid UTF-8, quotes; times that go back
    "names.bin": stream([rec(ENTRY, 1, b"\x1b[2J\x9b1m"), rec(ENTRY, 2, b"\xff\xfe\"\\x"),
                         rec(RETURN | BACK, 2, b"", dt=500), rec(RETURN, 1, b"\xc3\xa9t\xc3\xa9")]),
}

# Under load a ring buffer drops events: here C's entry, so its return comes while A and B
# (entered in the trace) are open. Written as a slice from the trace's start to C's return,
# it overlapped A and B, which end later (tests/attach.sh saw "badly nested: 3").
LOST_ENTRY = stream([rec(ENTRY, 1, b"A>>a"), rec(ENTRY, 2, b"B>>b"), rec(RETURN, 3, b"C>>c"),
                     rec(RETURN, 2, b"B>>b"), rec(RETURN, 1, b"A>>a")])


def main():
    seeds = os.path.join(ROOT, "fuzz/seeds/flow")
    regress = os.path.join(ROOT, "fuzz/regress/flow")
    os.makedirs(seeds, exist_ok=True)
    os.makedirs(regress, exist_ok=True)
    for name, data in SEEDS.items():
        open(os.path.join(seeds, name), "wb").write(data)
    open(os.path.join(regress, "return-whose-entry-was-lost.bin"), "wb").write(LOST_ENTRY)


if __name__ == "__main__":
    main()
