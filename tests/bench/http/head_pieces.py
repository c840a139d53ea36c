#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/http/head_pieces.py - what a slow head costs examples/http's one thread (review
# finding 13): the server's CPU time (utime + stime from /proc) for 32 KiB of header fields
# sent in 4-byte pieces, and for 100,000 empty lines before a request line.
#
#   tests/bench/http/head_pieces.py [DIR]     DIR: the service's classes (examples/http)
import os
import re
import socket
import subprocess
import sys
import time

DIR = sys.argv[1] if len(sys.argv) > 1 else "examples/http"
p = subprocess.Popen(["build/sqvm", "-cp", DIR, DIR + "/Server.som", "0", "10000", "30000"],
                     stdout=subprocess.PIPE, text=True)
port = int(re.search(r":(\d+)", p.stdout.readline()).group(1))


def cpu():
    f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


fields = b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 90) for i in range(320))
raw = b"GET /hello HTTP/1.1\r\nHost: t\r\n" + fields + b"\r\n"
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c0 = cpu()
for i in range(0, len(raw), 4):
    s.sendall(raw[i:i + 4])
    time.sleep(0.00005)
answer = s.recv(15)
print("%s: %d bytes of head in 4-byte pieces: %s, server CPU %.2f s" % (DIR, len(raw), answer.decode(), cpu() - c0))
s = socket.create_connection(("127.0.0.1", port))
c0 = cpu()
s.sendall(b"\r\n" * 100000)
s.settimeout(5)
try:
    answer = s.recv(15).decode()
except socket.timeout:
    answer = "no answer in 5 s"
print("%s: 100,000 empty lines: %s, server CPU %.2f s" % (DIR, answer, cpu() - c0))
p.kill()
