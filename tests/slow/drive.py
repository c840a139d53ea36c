#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/slow/drive.py VM DIR ROUNDS EVERY CONNS BALLAST [--midflight]: runs
# tests/slow/SlowService.som under load over real sockets on 127.0.0.1 and seeds its
# faults on a fixed schedule (tests/slow.sh).
#
# It listens as the service's upstream first (a line in, "y" out 30 ms later), starts
# the VM (VM, on SlowService.som), writes its PID to DIR/pid and waits for DIR/go.
# Then ROUNDS rounds on CONNS keep-alive connections: round k, every EVERY-th, is one
# seeded request alone (sem, gc, io in turn) once every connection has its answer; the
# others are a "fast" request on every connection at once. With --midflight the fast
# rounds start before DIR/go exists and go on until it does (a busy server that a tool
# attaches to), and only the rounds after it count.
#
# The service answers each request with its id and its time by the service's own clock.
# It prints "seeded ID KIND" for each seeded request, "slowed ID US" for each fast one
# that took over 21 ms all the same (the machine, busy, did not run the VM), "near ID
# US" for those within 1 ms of 20, "unslowed ID KIND US" for a seeded request that the
# service timed under 21 ms all the same (not a slow request), "fast N" (the fast requests after the go), and
# "first ID" (the first request id after the go), then stops the service once DIR/stop
# exists; exits 1 unless every answer came, in order.
import os
import socket
import subprocess
import sys
import threading
import time

vm, d, rounds, every, conns, ballast = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
midflight = "--midflight" in sys.argv[7:]
here = os.path.dirname(os.path.abspath(__file__))

up = socket.socket()
up.bind(("127.0.0.1", 0))
up.listen(1)


def upstream():
    c, _ = up.accept()
    f = c.makefile("rb")
    for _ in f:
        time.sleep(0.030)
        c.sendall(b"y\n")


threading.Thread(target=upstream, daemon=True).start()
# an allocation sample every 16 KB or so: the window's samples are checked (tests/slow.sh)
proc = subprocess.Popen([vm, "--alloc-sample", "16K", os.path.join(here, "SlowService.som"), str(up.getsockname()[1]), str(ballast)],
                        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
line = proc.stdout.readline().decode()
if not line.startswith("listening on 127.0.0.1:"):
    sys.exit(f"drive.py: the service said {line!r}")
port = int(line.rsplit(":", 1)[1])
with open(os.path.join(d, "pid.tmp"), "w") as f:
    f.write(f"{proc.pid}\n")
os.rename(os.path.join(d, "pid.tmp"), os.path.join(d, "pid"))

socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(conns)]
files = [s.makefile("rb") for s in socks]


# Fast requests that the service itself timed over the threshold (the machine did not
# give the VM a CPU): slow too, and those within 1 ms of it, which either clock may put
# on either side.
THRESHOLD_US = 20000
slowed, near, unslowed = [], [], []
counting = False


def answer(i, kind):
    got = files[i].readline().decode().split()
    if len(got) != 3 or got[2] != kind:
        sys.exit(f"drive.py: asked {kind}, got {got!r}")
    rid, us = int(got[0]), int(got[1])
    if counting and kind == "fast":
        if us > THRESHOLD_US + 1000:
            slowed.append((rid, us))
        elif us >= THRESHOLD_US - 1000:
            near.append((rid, us))
    elif counting and us <= THRESHOLD_US + 1000:
        # a seed that did not slow its request past the threshold (a collection quicker
        # than planned): not a slow request
        unslowed.append((rid, kind, us))
        if us >= THRESHOLD_US - 1000:
            near.append((rid, us))
        return None
    return rid


def fast_round():
    for s in socks:
        s.sendall(b"fast\n")
    return [answer(i, "fast") for i in range(conns)]


go = os.path.join(d, "go")
deadline = time.time() + 30
if midflight:
    while not os.path.exists(go) and time.time() < deadline:
        fast_round()
while not os.path.exists(go):
    if time.time() > deadline:
        sys.exit("drive.py: no go file")
    time.sleep(0.01)

counting = True
kinds = ["sem", "gc", "io"]
seeded, fast, first = [], 0, None
for k in range(1, rounds + 1):
    if k % every == 0:
        kind = kinds[(k // every - 1) % 3]
        socks[0].sendall(kind.encode() + b"\n")
        rid = answer(0, kind)
        ids = [rid] if rid is not None else []
        if rid is not None:
            seeded.append((rid, kind))
    else:
        ids = fast_round()
        fast += len(ids)
    if first is None and ids:
        first = min(ids)
for i, kind in seeded:
    print(f"seeded {i} {kind}")
for i, us in slowed:
    print(f"slowed {i} {us}")
for i, us in near:
    print(f"near {i} {us}")
for i, kind, us in unslowed:
    print(f"unslowed {i} {kind} {us}")
print(f"fast {fast}")
print(f"first {first}")
sys.stdout.flush()
# the service runs on until DIR/stop (the tool's last lines come from it)
stop = os.path.join(d, "stop")
deadline = time.time() + 60
while not os.path.exists(stop) and time.time() < deadline:
    time.sleep(0.05)
for s in socks:
    s.close()
proc.kill()
proc.wait()
