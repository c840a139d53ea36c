#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# fuzz/stack_image.py - writes fuzz_stack's inputs (the layout: fuzz/fuzz_stack.c): a
# well-formed memory image of one VM, a running process with a stack of frames and the
# class table their methods belong to, as the seeds of fuzz/seeds/stack/; and the shape
# of the review's finding 1 (frame_ip = 32 MiB over a 4096-byte stack) for
# fuzz/regress/stack/. The block's layout is read from probes/debug_offsets.h, so a field
# appended there is one here too.
#
#   fuzz/stack_image.py          rewrite fuzz/seeds/stack/* and the finding-1 input
import os
import re
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BASE = 0x10000000
SIZES = {"char": 1, "uint8_t": 1, "uint32_t": 4, "uint64_t": 8}


def block_layout():
    """(name, size, count) of each SqDebugOffsets field, in order, from the header."""
    text = open(os.path.join(ROOT, "probes/debug_offsets.h")).read()
    body = text[text.index("typedef struct SqDebugOffsets {"):text.index("} SqDebugOffsets;")]
    fields = []
    for m in re.finditer(r"^\s*(char|uint8_t|uint32_t|uint64_t)\s+(\w+)(?:\[(\d+)\])?;", body, re.M):
        fields.append((m.group(2), SIZES[m.group(1)], int(m.group(3) or 1)))
    return fields


def pack_block(values):
    """The block with natural alignment, as the C compiler lays it out."""
    out = bytearray()
    for name, size, count in block_layout():
        while len(out) % size:
            out.append(0)
        v = values.get(name, 0)
        if isinstance(v, bytes):
            out += v.ljust(size * count, b"\0")
        else:
            out += v.to_bytes(size * count, "little")
    while len(out) % 8:
        out.append(0)
    return bytes(out)


# The structures' field offsets (the VM's are different; the walk must not care).
OFFSETS = dict(
    process_fp=0, process_stack_base=8, process_stack_limit=16,
    frame_caller=0, frame_method=8, frame_ip=16, frame_self=24, frame_closure=32,
    method_selector=0, method_holder=8, method_print_name=16, method_flags=24, method_code=32,
    method_lines=40, method_line=48, method_source_path=56, method_code_len=64,
    class_name=0, class_index=8, method_flag_block=1,
    header_class_mask=0xfffff, string_length=8, string_bytes=16,
    value_tag_mask=3, value_int_mask=1, value_float_tag=2,
)
STACK = 0x1000          # the stack memory: [STACK, STACK + STACK_LEN) of the image
STACK_LEN = 4096


class Image:
    def __init__(self, size):
        self.mem = bytearray(size)

    def u64(self, off, v): self.mem[off:off + 8] = struct.pack("<Q", v)
    def u32(self, off, v): self.mem[off:off + 4] = struct.pack("<I", v)
    def u16(self, off, v): self.mem[off:off + 2] = struct.pack("<H", v)
    def put(self, off, b): self.mem[off:off + len(b)] = b


def image(frames, overrides=None, mapped=None, spacing=0x100):
    """A VM whose running process has frames (innermost first: (class, name, block,
    line)), spacing bytes apart, over a STACK_LEN-byte stack, and the bytes of the
    input. At most 6 distinct methods."""
    m = Image(STACK + STACK_LEN)
    classes = sorted({f[0] for f in frames})
    # globals: current_process, class_table, class_count
    m.u64(0x000, BASE + 0x040)
    m.u64(0x008, BASE + 0x100)
    m.u32(0x010, len(classes))
    strings = 0x600
    def string(s):
        nonlocal strings
        at = strings
        m.put(at, s.encode() + b"\0")
        strings += len(s) + 1
        return BASE + at
    for i, c in enumerate(classes):      # the table and each ClassInfo (its index: i)
        info = 0x140 + 16 * i
        m.u64(0x100 + 8 * i, BASE + info)
        m.u64(info + OFFSETS["class_name"], string(c))
        m.u32(info + OFFSETS["class_index"], i)
    path = string("/home/user/app/Main.som")
    methods = sorted(set(frames), key=frames.index)      # one Method per distinct frame
    for i, (cls, name, block, line) in enumerate(methods):
        method, code, lines = 0x200 + 0x50 * i, 0x480 + 0x20 * i, 0x540 + 0x20 * i
        m.u64(method + OFFSETS["method_holder"], BASE + 0x140 + 16 * classes.index(cls))
        m.u64(method + OFFSETS["method_print_name"], string(name))
        m.u16(method + OFFSETS["method_flags"], 1 if block else 0)
        m.u64(method + OFFSETS["method_code"], BASE + code)
        m.u32(method + OFFSETS["method_code_len"], 16)
        m.u64(method + OFFSETS["method_lines"], BASE + lines)
        m.u32(method + OFFSETS["method_line"], line)
        m.u64(method + OFFSETS["method_source_path"], path)
        for b in range(16):
            m.u16(lines + 2 * b, line + b // 4)
    fp = STACK + 0x40                    # the bottom frame: method NULL
    for f in reversed(frames):
        i = methods.index(f)
        callee = fp + spacing
        m.u64(callee + OFFSETS["frame_caller"], BASE + fp)
        m.u64(callee + OFFSETS["frame_method"], BASE + 0x200 + 0x50 * i)
        m.u64(callee + OFFSETS["frame_ip"], BASE + 0x480 + 0x20 * i + 5)
        fp = callee
    m.u64(0x040 + OFFSETS["process_fp"], BASE + fp)
    m.u64(0x040 + OFFSETS["process_stack_base"], BASE + STACK)
    m.u64(0x040 + OFFSETS["process_stack_limit"], BASE + STACK + STACK_LEN)
    values = dict(OFFSETS, magic=b"SQVMDBG", version=1, current_process=BASE, class_table=BASE + 8,
                  class_count=BASE + 0x10)
    values["size"] = len(pack_block(values))
    values.update(overrides or {})
    return pack_block(values) + struct.pack("<Q", mapped or len(m.mem)) + bytes(m.mem)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    seeds = os.path.join(ROOT, "fuzz/seeds/stack")
    three = [("Main", "Main>>fib:", False, 12), ("Main", "[] in Main>>run", True, 7),
             ("Main", "Main>>run", False, 5)]
    write(os.path.join(seeds, "three-frames.img"), image(three))
    write(os.path.join(seeds, "two-classes.img"),
          image([("Point", "Point>>x", False, 3), ("Main", "Main>>run", False, 5)]))
    write(os.path.join(seeds, "escape-in-name.img"),
          image([("Main", "Main>>\x1b]0;owned\x07", False, 9), ("Main", "Main>>run", False, 5)]))
    # more frames than the fuzz target reads (64): a truncated stack
    write(os.path.join(seeds, "deep-recursion.img"),
          image([("Main", "Main>>fib:", False, 12)] * 99 + [("Main", "Main>>run", False, 5)], spacing=0x20))
    # Finding 1: the frame header "ends" 32 MiB past a frame of a 4096-byte stack, in
    # 64 MiB of mapped memory: the unbounded copy_top read 32 MiB into its 256 KiB window.
    write(os.path.join(ROOT, "fuzz/regress/stack/frame-ip-32m-over-4k-stack.img"),
          image(three, overrides={"frame_ip": 32 << 20}, mapped=64 << 20))


if __name__ == "__main__":
    sys.exit(main())
