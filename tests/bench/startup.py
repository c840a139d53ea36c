#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/startup.py - start-up: the CPU time (user + system, from the children's
# rusage) of a one-liner, median of 20 runs each, sqvm beside Lua 5.4 and LuaJIT.
#
#   tests/bench/startup.py [VM]          VM: build/sqvm
import resource
import shutil
import statistics
import subprocess
import sys

VM = sys.argv[1] if len(sys.argv) > 1 else "build/sqvm"
RUNS = 20


def cpu_ms(cmd):
    times = []
    for _ in range(RUNS):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    return statistics.median(times)


for cmd in ([VM, "-e", "1"], ["lua5.4", "-e", "print(1)"], ["luajit", "-e", "print(1)"]):
    if shutil.which(cmd[0]) or cmd[0] == VM:
        print("%-28s %.2f ms (median of %d)" % (" ".join(cmd), cpu_ms(cmd), RUNS))
