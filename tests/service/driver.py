#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/service/driver.py VM: the service tier's cases against examples/http's server.

Starts `VM -cp examples/http examples/http/Server.som 0 1000 3000` (a 1 s idle timeout, a
3 s deadline for a whole request), reads its port from the line "listening on
127.0.0.1:PORT", and talks to it through real sockets: raw bytes sent, the exact bytes of
each answer compared. One line per case: "ok NAME" or "FAIL NAME: why". Exit status 0
unless the server could not be started."""
import json
import os
import re
import resource
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

VM = sys.argv[1]
STATIC = "examples/http/static"
RESULTS = []


def skip(name, why):
    print("skip %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    RESULTS.append(name)
    print(("ok " + name) if cond else ("FAIL %s: %s" % (name, why)), flush=True)


def start():
    p = subprocess.Popen([VM, "-cp", "examples/http", "examples/http/Server.som", "0", "1000", "3000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", line)
    if not m:
        p.kill()
        print("FAIL start: first line %r; stderr %r" % (line, p.stderr.read()[:2000]))
        sys.exit(1)
    return p, int(m.group(1))


SERVER, PORT = start()


class Conn:
    """A client connection with a buffer, so that pipelined answers split correctly"""

    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def sendall(self, data):
        self.sock.sendall(data)

    def recv(self, n):
        if self.buf:
            out, self.buf = self.buf[:n], self.buf[n:]
            return out
        return self.sock.recv(n)

    def __getattr__(self, name):
        return getattr(self.sock, name)


def conn():
    return Conn()


def read_response(s):
    """One response: (status, headers dict, body, raw bytes); None at EOF before one"""
    data = s.buf
    while b"\r\n\r\n" not in data:
        chunk = s.sock.recv(65536)
        if not chunk:
            s.buf = b""
            return None if not data else (0, {}, b"", data)
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, v = line.split(": ", 1)
        headers[k.lower()] = v
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = s.sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    s.buf = rest[n:]
    return status, headers, rest[:n], head + b"\r\n\r\n" + rest[:n]


def exchange(raw, s=None):
    """Sends raw bytes on a new connection (or s, made already); answers the whole answer
    until EOF"""
    s = s or conn()
    s.sendall(raw)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            out += b"<timeout>"
            break
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def request(method, path, body=None, headers=""):
    raw = "%s %s HTTP/1.1\r\nHost: t\r\n%s" % (method, path, headers)
    if body is not None:
        raw += "Content-Length: %d\r\n" % len(body)
    raw = raw.encode() + b"\r\n" + (body or b"")
    return raw


def resp(status, reason, ctype=None, body=b"", close=False, extra=""):
    out = "HTTP/1.1 %d %s\r\n" % (status, reason)
    if close:
        out += "Connection: close\r\n"
    out += extra
    if status == 204:
        return (out + "\r\n").encode()
    out += "Content-Type: %s\r\nContent-Length: %d\r\n\r\n" % (ctype, len(body))
    return out.encode() + body


def plain(status, reason, close=False, extra=""):
    return resp(status, reason, "text/plain", (reason + "\n").encode(), close, extra)


def one_on_keepalive(raw):
    """One request on a kept-alive connection: the answer's bytes, then the connection
    must still serve /hello"""
    s = conn()
    s.sendall(raw)
    r = read_response(s)
    s.sendall(request("GET", "/hello"))
    again = read_response(s)
    s.close()
    return (r[3] if r else b"<eof>"), (again is not None and again[0] == 200)


HELLO = resp(200, "OK", "text/plain", b"Hello, world")


def routes():
    got, alive = one_on_keepalive(request("GET", "/hello"))
    check("GET /hello: 200 text/plain 'Hello, world', kept alive", got == HELLO and alive, repr(got))
    cases = [
        ("GET /kv/color absent: 404", request("GET", "/kv/color"), plain(404, "Not Found")),
        ("PUT /kv/color new: 201", request("PUT", "/kv/color", b"blue"), plain(201, "Created")),
        ("GET /kv/color: 200 the body", request("GET", "/kv/color"), resp(200, "OK", "application/octet-stream", b"blue")),
        ("PUT /kv/color again: 204", request("PUT", "/kv/color", "grün".encode()), resp(204, "No Content")),
        ("GET /kv/color: the UTF-8 body, its bytes counted", request("GET", "/kv/color"),
         resp(200, "OK", "application/octet-stream", "grün".encode())),
        ("PUT /kv/empty with an empty body: 201", request("PUT", "/kv/empty", b""), plain(201, "Created")),
        ("GET /kv/empty: 200, no bytes", request("GET", "/kv/empty"), resp(200, "OK", "application/octet-stream", b"")),
        ("DELETE /kv/color: 204", request("DELETE", "/kv/color"), resp(204, "No Content")),
        ("DELETE /kv/color again: 404", request("DELETE", "/kv/color"), plain(404, "Not Found")),
        ("GET /kv/color after DELETE: 404", request("GET", "/kv/color"), plain(404, "Not Found")),
        ("PUT /kv/ (no key): 404", request("PUT", "/kv/", b"x"), plain(404, "Not Found")),
        ("GET /kv/a/b (two segments): 404", request("GET", "/kv/a/b"), plain(404, "Not Found")),
        ("POST /kv/x: 405 with Allow", request("POST", "/kv/x", b"x"),
         plain(405, "Method Not Allowed", extra="Allow: PUT, GET, DELETE\r\n")),
        ("HEAD /hello: 405", request("HEAD", "/hello"), plain(405, "Method Not Allowed", extra="Allow: GET\r\n")),
        ("GET /nope: 404", request("GET", "/nope"), plain(404, "Not Found")),
        ("GET /hello/x: 404", request("GET", "/hello/x"), plain(404, "Not Found")),
        ("GET /hello?x=1 (a query): 200", request("GET", "/hello?x=1"), HELLO),
    ]
    for name, raw, want in cases:
        got, alive = one_on_keepalive(raw)
        check(name, got == want and alive, "got %r alive %s" % (got, alive))


def trace_context():
    """W3C traceparent: a valid one is answered with a traceresponse of the same trace id
    and flags and a span of the server's own; a malformed one (any of the spec's rules
    broken) is ignored, and the request is served all the same"""
    tid, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    for flags in ("01", "00"):
        s = conn()
        s.sendall(request("GET", "/hello", headers="traceparent: 00-%s-%s-%s\r\n" % (tid, parent, flags)))
        r = read_response(s)
        s.close()
        tr = r[1].get("traceresponse", "") if r else ""
        parts = tr.split("-")
        check("traceparent (flags %s): 200, and a traceresponse with its trace id, a span of its own, its flags"
              % flags, r is not None and r[0] == 200 and r[2] == b"Hello, world" and len(tr) == 55 and
              len(parts) == 4 and parts[0] == "00" and parts[1] == tid and parts[3] == flags and
              parts[2] != parent and parts[2] != "0" * 16 and all(c in "0123456789abcdef" for c in parts[2]), repr(r))
    bad = ["00-%s-%s-01-" % (tid, parent), "00-%s-%s-1" % (tid, parent), "ff-%s-%s-01" % (tid, parent),
           "00-%s-%s-01" % (tid.upper(), parent), "00-%s-%s-01" % ("0" * 32, parent),
           "00-%s-%s-01" % (tid, "0" * 16), "00_%s_%s_01" % (tid, parent), "", "x" * 200]
    for value in bad:
        got, alive = one_on_keepalive(request("GET", "/hello", headers="traceparent: %s\r\n" % value))
        check("malformed traceparent %r: served, no traceresponse" % value[:60], got == HELLO and alive, repr(got))
    got, alive = one_on_keepalive(request("GET", "/hello"))
    check("no traceparent: no traceresponse", got == HELLO and alive, repr(got))


def lcg_records(n):
    seed, recs = 42, []
    for i in range(1, n + 1):
        seed = (seed * 1103515245 + 12345) % 2147483648
        recs.append({"id": i, "name": "item-%d" % i, "score": seed % 1000})
    recs.sort(key=lambda r: (r["score"], r["id"]))
    return recs


def work():
    five = (b'{"n":5,"items":[{"id":1,"name":"item-1","score":27},{"id":2,"name":"item-2","score":264},'
            b'{"id":5,"name":"item-5","score":735},{"id":3,"name":"item-3","score":753},'
            b'{"id":4,"name":"item-4","score":806}]}')
    got, alive = one_on_keepalive(request("GET", "/work?n=5"))
    check("GET /work?n=5: the exact JSON", got == resp(200, "OK", "application/json", five) and alive, repr(got))
    s = conn()
    s.sendall(request("GET", "/work?n=20000"))
    r = read_response(s)
    s.close()
    ok = r and r[0] == 200 and json.loads(r[2]) == {"n": 20000, "items": lcg_records(20000)}
    check("GET /work?n=20000: 20000 records sorted by score then id", ok, repr(r[3][:300]) if r else "eof")
    bad = resp(400, "Bad Request", "text/plain", b"n must be an integer from 1 to 100000\n")
    for q in ["/work", "/work?n=0", "/work?n=100001", "/work?n=abc", "/work?n=-3", "/work?m=4"]:
        got, alive = one_on_keepalive(request("GET", q))
        check("GET %s: 400, kept alive" % q, got == bad and alive, repr(got))


def static():
    for name, ctype in [("index.html", "text/html; charset=utf-8"), ("hello.txt", "text/plain; charset=utf-8")]:
        with open(os.path.join(STATIC, name), "rb") as f:
            body = f.read()
        got, alive = one_on_keepalive(request("GET", "/static/" + name))
        check("GET /static/%s: the file's %d bytes" % (name, len(body)),
              got == resp(200, "OK", ctype, body) and alive, repr(got))
    got, alive = one_on_keepalive(request("GET", "/static/docs"))
    check("GET /static/docs (a folder: it opens, reading it fails): 500, kept alive",
          got == plain(500, "Internal Server Error") and alive, repr(got))
    nf = plain(404, "Not Found")
    for path in [b"/static/", b"/static/.", b"/static/..", b"/static/../Server.som", b"/static/..%2fServer.som",
                 b"/static/a/../index.html", b"/static//etc/passwd", b"/static/index.html%00", b"/static/missing.txt",
                 b"/static/index.html\x00.txt", b"/static/\x00"]:
        got, alive = one_on_keepalive(b"GET " + path + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        check("GET %r: 404" % path.decode("latin-1"), got == nf and alive, repr(got))


def connections():
    s = conn()
    s.sendall(request("GET", "/hello") + request("PUT", "/kv/p", b"12345") + request("GET", "/kv/p"))
    rs = [read_response(s) for _ in range(3)]
    s.close()
    check("pipelining: three requests in one write, three answers in order",
          [r[3] for r in rs] == [HELLO, plain(201, "Created"), resp(200, "OK", "application/octet-stream", b"12345")],
          repr(rs))
    got = exchange(b"GET /hello HTTP/1.0\r\n\r\n")
    check("HTTP/1.0: answered, Connection: close, then closed",
          got == resp(200, "OK", "text/plain", b"Hello, world", close=True), repr(got))
    s = conn()
    s.sendall(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    a = read_response(s)
    s.sendall(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    b = read_response(s)
    s.close()
    check("HTTP/1.0 with Connection: keep-alive: kept", a and b and a[3] == HELLO and b[3] == HELLO, repr((a, b)))
    got = exchange(request("GET", "/hello", headers="Connection: close\r\n"))
    check("Connection: close: answered, then closed", got == resp(200, "OK", "text/plain", b"Hello, world", close=True),
          repr(got))
    got = exchange(b"\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    check("empty lines before a request are skipped",
          got == resp(200, "OK", "text/plain", b"Hello, world", close=True), repr(got))
    s = conn()
    t0 = time.monotonic()
    s.sendall(request("GET", "/hello"))
    r = read_response(s)
    end = s.recv(10)
    idle = time.monotonic() - t0
    s.close()
    check("an idle connection is closed after 1 s without a byte", r[3] == HELLO and end == b"" and 0.9 < idle < 2.5,
          "after %.2f s: %r" % (idle, end))


BAD = plain(400, "Bad Request", close=True)


def malformed():
    cases = [
        ("no version", b"GET /hello\r\nHost: t\r\n\r\n", BAD),
        ("garbage", b"GARBAGE\r\n\r\n", BAD),
        ("two spaces", b"GET  /hello HTTP/1.1\r\nHost: t\r\n\r\n", BAD),
        ("a fourth part", b"GET /hello HTTP/1.1 x\r\nHost: t\r\n\r\n", BAD),
        ("target without /", b"GET hello HTTP/1.1\r\nHost: t\r\n\r\n", BAD),
        ("method in lower case", b"get /hello HTTP/1.1\r\nHost: t\r\n\r\n", BAD),
        ("version HTTP/2.0: 505", b"GET /hello HTTP/2.0\r\nHost: t\r\n\r\n",
         plain(505, "HTTP Version Not Supported", close=True)),
        ("version garbage", b"GET /hello HTTX/1.1\r\nHost: t\r\n\r\n", BAD),
        ("HTTP/1.1 without Host", b"GET /hello HTTP/1.1\r\n\r\n", BAD),
        ("header field without colon", b"GET /hello HTTP/1.1\r\nHost: t\r\nNoColon\r\n\r\n", BAD),
        ("space before the colon", b"GET /hello HTTP/1.1\r\nHost : t\r\n\r\n", BAD),
        ("Content-Length not a number", b"PUT /kv/a HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n1", BAD),
        ("Content-Length negative", b"PUT /kv/a HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", BAD),
        ("two different Content-Lengths", b"PUT /kv/a HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", BAD),
        ("Transfer-Encoding chunked: 501", b"PUT /kv/a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         plain(501, "Not Implemented", close=True)),
    ]
    for name, raw, want in cases:
        got = exchange(raw)
        check("malformed: %s: exact answer, then closed" % name, got == want, repr(got))
    check("the server still serves after bad input", exchange(request("GET", "/hello", headers="Connection: close\r\n"))
          == resp(200, "OK", "text/plain", b"Hello, world", close=True))


def limits():
    line = b"GET /hello?" + b"x" * (8192 - len(b"GET /hello? HTTP/1.1")) + b" HTTP/1.1"
    got, alive = one_on_keepalive(line + b"\r\nHost: t\r\n\r\n")
    check("a request line of exactly 8192 bytes: 200", len(line) == 8192 and got == HELLO and alive, repr(got[:200]))
    got = exchange(line.replace(b"?", b"?x") + b"\r\nHost: t\r\n\r\n")
    check("a request line of 8193 bytes: 400, closed", got == BAD, repr(got[:200]))
    got = exchange(b"GET /" + b"a" * 20000)
    check("8 KiB and more without a line end: 400 before the rest, closed", got == BAD, repr(got[:200]))
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 90) for i in range(320))
    fields += b"X-Last: " + b"v" * (32768 - len(fields) - len(b"X-Last: \r\nHost: t")) + b"\r\nHost: t"
    got, alive = one_on_keepalive(b"GET /hello HTTP/1.1\r\n" + fields + b"\r\n\r\n")
    check("header fields of exactly 32 KiB: 200", len(fields) == 32768 and got == HELLO and alive, repr(got[:200]))
    got = exchange(b"GET /hello HTTP/1.1\r\nX: y\r\n" + fields + b"\r\n\r\n")
    check("header fields over 32 KiB: 400, closed", got == BAD, repr(got[:200]))
    got = exchange(b"GET /hello HTTP/1.1\r\nHost: t\r\n" + b"X-Many: " + b"v" * 100000)
    check("header fields growing past the limit without an end: 400, closed", got == BAD, repr(got[:200]))
    mib = b"m" * 1048576
    s = conn()
    s.sendall(request("PUT", "/kv/big", mib))
    a = read_response(s)
    s.sendall(request("GET", "/kv/big"))
    b = read_response(s)
    s.close()
    check("a body of exactly 1 MiB: 201, read back whole", a and b and a[0] == 201 and b[2] == mib,
          repr((a and a[3][:100], b and b[3][:100])))
    got = exchange(b"PUT /kv/big HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n")
    check("Content-Length 1048577: 413 at once, closed", got == plain(413, "Content Too Large", close=True), repr(got))
    got = exchange(b"PUT /kv/big HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n")
    check("Content-Length of 23 digits: 413, closed", got == plain(413, "Content Too Large", close=True), repr(got))


def slow():
    """Slowloris clients send a byte a second; meanwhile others are served at once, and
    each slow one gets 408 once its request has taken 3 s"""
    slow_raw = request("GET", "/hello")
    results = {}

    def loris(i):
        """A byte, then up to a second's wait for an answer, and so on: the answer is
        read as soon as it comes, and no byte follows it"""
        s = conn()
        t0 = time.monotonic()
        try:
            for k in range(len(slow_raw)):
                s.sendall(slow_raw[k:k + 1])
                if select.select([s.sock], [], [], 1.0)[0]:
                    got = b""
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        got += chunk
                    results[i] = (got, time.monotonic() - t0)
                    break
        except OSError as e:
            results[i] = (repr(e).encode(), time.monotonic() - t0)
        s.close()

    threads = [threading.Thread(target=loris, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    worst, ok = 0.0, 0
    for _ in range(200):
        t0 = time.monotonic()
        if exchange(request("GET", "/hello", headers="Connection: close\r\n")) == resp(
                200, "OK", "text/plain", b"Hello, world", close=True):
            ok += 1
        worst = max(worst, time.monotonic() - t0)
    for t in threads:
        t.join()
    check("8 slowloris clients: 200 other requests all served, the slowest in under 0.25 s",
          ok == 200 and worst < 0.25, "%d ok, slowest %.3f s" % (ok, worst))
    want = plain(408, "Request Timeout", close=True)
    good = [i for i, (got, t) in results.items() if got == want and 2.9 < t < 5.5]
    check("each slowloris client: 408 once its request has taken 3 s, closed", len(good) == 8,
          repr(sorted(results.items())[:3]))


def fd_count():
    return len(os.listdir("/proc/%d/fd" % SERVER.pid))


def rss_kib():
    with open("/proc/%d/status" % SERVER.pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def settle(want):
    for _ in range(200):
        if fd_count() == want:
            return True
        time.sleep(0.01)
    return False


def disconnects(base_fds):
    for n, label in [(100000, "mid-response (RST after 1 KiB of /work?n=100000)")]:
        s = conn()
        s.sendall(request("GET", "/work?n=%d" % n))
        s.recv(1024)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    s = conn()
    s.sendall(request("PUT", "/kv/half", b"x" * 10)[:-5])
    s.close()
    s = conn()
    s.sendall(b"GET /hel")
    s.close()
    for partial in [b"", b"GET /hel", request("GET", "/hello")]:
        s = conn()
        s.sendall(partial)
        time.sleep(0.05)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    got = exchange(request("GET", "/hello", headers="Connection: close\r\n"))
    check("clients that leave mid-response, mid-body and mid-head, or reset the connection: the server serves on",
          got == resp(200, "OK", "text/plain", b"Hello, world", close=True), repr(got))
    check("... and their descriptors are closed (%d)" % base_fds, settle(base_fds), "%d open" % fd_count())


def sequential(base_fds):
    req = request("GET", "/hello", headers="Connection: close\r\n")
    want = resp(200, "OK", "text/plain", b"Hello, world", close=True)
    bad, counts, rss = 0, [], []
    t0 = time.monotonic()
    for i in range(10000):
        if exchange(req) != want:
            bad += 1
        if i % 1000 == 999:
            counts.append(fd_count())
            rss.append(rss_kib())
    took = time.monotonic() - t0
    check("10,000 sequential connections: every answer exact (%.1f s)" % took, bad == 0, "%d wrong" % bad)
    check("... the descriptor count steady at %d" % base_fds, settle(base_fds) and max(counts) <= base_fds + 1,
          "per 1000: %r" % counts)
    check("... RSS bounded: it grows by under 4 MiB after the first 1,000", rss[-1] - rss[0] < 4096,
          "KiB per 1000: %r" % rss)


def probes():
    """The request probes under bpftrace: one request of each kind, counted exactly by
    route template and status (root and bpftrace; else a skip)"""
    name = "request probes: exact counts by route and status (bpftrace)"
    if os.geteuid() != 0 or not shutil.which("bpftrace"):
        return skip(name, "needs root and bpftrace")
    vm = os.path.realpath(VM)
    bt = subprocess.Popen(["bpftrace", "-p", str(SERVER.pid), "-e",
                           'BEGIN { printf("--ready--\\n"); } '
                           'usdt:%s:squeak:request__begin { @begin[str(arg1)] = count(); } '
                           'usdt:%s:squeak:request__end { @end[str(arg1), (int32)arg3] = count(); '
                           'if (str(arg1) == "bad request") { exit(); } }' % (vm, vm)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and bt.stdout.readline().strip() != "--ready--":
        pass
    for raw in [request("GET", "/hello")] * 3 + [
            request("PUT", "/kv/probe", b"1"), request("PUT", "/kv/probe", b"2"), request("GET", "/kv/probe"),
            request("DELETE", "/kv/probe"), request("GET", "/kv/probe"), request("GET", "/work?n=3"),
            request("GET", "/static/index.html"), request("GET", "/nope"), b"BAD\r\n\r\n"]:
        exchange(raw.replace(b"Host: t\r\n", b"Host: t\r\nConnection: close\r\n"))
    # The last request ends the session: bpftrace exits on its request__end and prints
    # its maps. A SIGINT only if it has not after 30 s, again each 2 s (bpftrace 0.17 can
    # miss one), so that a lost request fails this check instead of hanging the driver.
    out = None
    for wait in [30] + [2] * 5:
        try:
            out = bt.communicate(timeout=wait)[0]
            break
        except subprocess.TimeoutExpired:
            bt.send_signal(2)
    if out is None:
        bt.kill()
        out = bt.communicate()[0]
    want = {"@begin[GET /hello]: 3", "@begin[PUT /kv]: 2", "@begin[GET /kv]: 2", "@begin[DELETE /kv]: 1",
            "@begin[GET /work]: 1", "@begin[GET /static]: 1", "@begin[unmatched]: 1", "@begin[bad request]: 1",
            "@end[GET /hello, 200]: 3", "@end[PUT /kv, 201]: 1", "@end[PUT /kv, 204]: 1", "@end[GET /kv, 200]: 1",
            "@end[GET /kv, 404]: 1", "@end[DELETE /kv, 204]: 1", "@end[GET /work, 200]: 1",
            "@end[GET /static, 200]: 1", "@end[unmatched, 404]: 1", "@end[bad request, 400]: 1"}
    got = {line for line in out.splitlines() if line.startswith("@")}
    check(name, got == want, "missing %r, extra %r" % (sorted(want - got), sorted(got - want)))


def out_of_descriptors():
    """A server limited to 24 descriptors, given 40 connections at once: the accepts
    that fail are reported, the server survives, and serves once they have closed"""
    p = subprocess.Popen([VM, "-cp", "examples/http", "examples/http/Server.som", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24)))
    port = int(p.stdout.readline().rsplit(":", 1)[1])
    many = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    time.sleep(0.5)
    for s in many:
        s.close()
    time.sleep(0.5)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(request("GET", "/hello", headers="Connection: close\r\n"))
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    alive = p.poll() is None
    p.kill()
    err = p.stderr.read()
    lines = set(err.splitlines())
    check("out of descriptors (ulimit -n 24, 40 connections): accept fails, the server serves on",
          alive and got == resp(200, "OK", "text/plain", b"Hello, world", close=True) and
          lines == {"a ServerSocket(127.0.0.1:%d) accept: Too many open files (errno 24)" % port},
          "alive %s, got %r, stderr %r" % (alive, got, err[:1000]))


def hello_times():
    """One GET /hello on a new connection: (ms from the request sent to the answer's end,
    None if wrong; ms the connect took). The connect is the client's kernel's: with
    20,000 ports of 127.0.0.1 in use or in TIME_WAIT, picking a free one took it 300 ms
    in a CI run, which says nothing of the server."""
    t0 = time.monotonic()
    s = conn()
    t1 = time.monotonic()
    got = exchange(request("GET", "/hello", headers="Connection: close\r\n"), s)
    ms = (time.monotonic() - t1) * 1000
    return (ms if got == resp(200, "OK", "text/plain", b"Hello, world", close=True) else None), (t1 - t0) * 1000


def hello_ms():
    """The latency of one GET /hello on a new connection, connect included, in ms (None if
    wrong)"""
    served, connect = hello_times()
    return None if served is None else served + connect


def smuggling():
    """Review finding 2: 32 bytes 0x80 in a header field must not move the end of the
    head: one request (Content-Length 52) is one answer, and the body stored whole"""
    body = b"A" * 20 + b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
    raw = (b"PUT /kv/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nX: " % len(body) +
           b"\x80" * 32 + b"\r\n\r\n" + body)
    s = conn()
    s.sendall(raw)
    first = read_response(s)
    s.settimeout(0.5)
    extra = s.buf  # what came after the first answer
    try:
        extra += s.sock.recv(65536)
    except socket.timeout:
        pass
    s.close()
    check("invalid UTF-8 in a header field (32 x 0x80): one request, one answer (201)",
          first and first[0] == 201 and extra == b"", repr((first and first[3], extra)))
    got, _ = one_on_keepalive(request("GET", "/kv/smuggled"))
    check("... and the body stored is the 52 bytes sent", got == resp(200, "OK", "application/octet-stream", body),
          repr(got[:200]))


def cpu_s():
    with open("/proc/%d/stat" % SERVER.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send_pieces(s, data, size, every, pause):
    """Sends data in pieces of size bytes, pausing pause seconds before every every-th
    piece, so that the server reads them apart rather than as one"""
    for n, i in enumerate(range(0, len(data), size)):
        if n % every == 0:
            time.sleep(pause)
        s.sendall(data[i:i + size])


def body_in_pieces():
    """Review finding 13: a 1 MiB body in 1 KiB pieces is read whole (the server's CPU
    for it is printed for the record, not asserted)"""
    mib = bytes(range(256)) * 4096
    s = conn()
    c0 = cpu_s()
    s.sendall(b"PUT /kv/pieces HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n")
    send_pieces(s, mib, 1024, 64, 0.001)
    a = read_response(s)
    c1 = cpu_s()
    s.sendall(request("GET", "/kv/pieces"))
    b = read_response(s)
    s.sendall(request("DELETE", "/kv/pieces"))
    read_response(s)
    s.close()
    check("a 1 MiB body in 1 KiB pieces: 201, read back whole (server CPU %.2f s)" % (c1 - c0), a and b and a[0] == 201 and b[2] == mib,
          repr((a and a[3][:100], b and b[3][:100])))


def head_in_pieces():
    """Review finding 13, for the head: a request in 1-byte pieces (the blank line split
    at every place), and 32 KiB of header fields in 7-byte pieces, are read whole (the
    server's CPU for the second is printed for the record, not asserted); a few empty
    lines before a request line are ignored, more are a 400"""
    s = conn()
    send_pieces(s, request("GET", "/hello"), 1, 1, 0.0005)
    got = read_response(s)
    s.close()
    check("a request sent a byte at a time: 200", got is not None and got[3] == HELLO, repr(got and got[3][:200]))
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 90) for i in range(320))
    raw = b"GET /hello HTTP/1.1\r\nHost: t\r\n" + fields + b"\r\n"
    s = conn()
    c0 = cpu_s()
    send_pieces(s, raw, 7, 100, 0.0005)
    got = read_response(s)
    c1 = cpu_s()
    s.close()
    check("%d bytes of head in 7-byte pieces: 200 (server CPU %.2f s)" % (len(raw), c1 - c0),
          got is not None and got[3] == HELLO, repr(got and got[3][:200]))
    got, alive = one_on_keepalive(b"\r\n" * 8 + request("GET", "/hello"))
    check("8 empty lines before a request line: ignored, 200", got == HELLO and alive, repr(got[:200]))
    got = exchange(b"\r\n" * 9 + request("GET", "/hello"))
    check("9 empty lines before a request line: 400, closed", got == BAD, repr(got[:200]))
    got = exchange(b"\r\n" * 100000)
    check("100,000 empty lines: 400, closed", got == BAD, repr(got[:200]))


def store_full(base_fds):
    """Review finding 10: PUTs under fresh keys until the store is full: 507, the keys
    stored before still there, the server alive; deleting makes room again"""
    mib = b"f" * 1048576
    s = conn()
    stored, status = [], None
    for i in range(40):
        s.sendall(request("PUT", "/kv/full%d" % i, mib))
        status = read_response(s)[0]
        if status != 201:
            break
        stored.append(i)
    worst = max(hello_ms() or 1e9 for _ in range(5))
    ok = all((s.sendall(request("GET", "/kv/full%d" % i)) or read_response(s)[2]) == mib for i in stored)
    check("1 MiB PUTs until the store is full (32 MiB): 507 after %d, all of them still readable" % len(stored),
          status == 507 and 28 <= len(stored) <= 32 and ok and SERVER.poll() is None,
          "status %s after %d, readable %s" % (status, len(stored), ok))
    for i in stored:
        s.sendall(request("DELETE", "/kv/full%d" % i))
        read_response(s)
    s.sendall(request("PUT", "/kv/full-again", mib))
    again = read_response(s)[0]
    s.sendall(request("DELETE", "/kv/full-again"))
    read_response(s)
    keys, status = 0, None
    for i in range(4200):
        s.sendall(request("PUT", "/kv/k%d" % i, b"v"))
        status = read_response(s)[0]
        if status != 201:
            break
        keys += 1
    s.sendall(request("GET", "/kv/k0"))
    first = read_response(s)[2]
    for i in range(keys):
        s.sendall(request("DELETE", "/kv/k%d" % i))
        read_response(s)
    s.close()
    check("... room again once deleted (201); PUTs of fresh keys: 507 at the 4097th key, /hello in %.0f ms" % worst,
          again == 201 and status == 507 and first == b"v" and 4080 <= keys <= 4096 and worst < 100,
          "again %s, %d keys then %s" % (again, keys, status))


def slow_reader(base_fds):
    """Review finding 9: clients with a 4 KiB receive buffer pipeline 8 GET of a 1 MiB
    value and never read: each connection is closed once its answer has made no
    progress for the 3 s request deadline, while /hello answers in under 100 ms"""
    s = conn()
    s.sendall(request("PUT", "/kv/slow", b"s" * 1048576))
    read_response(s)
    s.close()
    readers = []
    for _ in range(3):
        r = socket.socket()
        r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        r.connect(("127.0.0.1", PORT))
        r.sendall(request("GET", "/kv/slow") * 8)
        readers.append(r)
    t0 = time.monotonic()
    worst, closed = 0.0, None
    while time.monotonic() - t0 < 10:
        worst = max(worst, hello_ms() or 1e9)
        if fd_count() == base_fds:
            closed = time.monotonic() - t0
            break
        time.sleep(0.05)
    for r in readers:
        r.close()
    check("3 clients that never read 8 MiB of answers: closed by the server after the 3 s deadline (%s s), "
          "/hello meanwhile at most %.0f ms" % (closed and "%.1f" % closed, worst),
          closed is not None and 2.5 < closed < 8 and worst < 100, "fds %d (base %d)" % (fd_count(), base_fds))
    got, _ = one_on_keepalive(request("DELETE", "/kv/slow"))
    check("... and the server serves on", got == resp(204, "No Content"), repr(got))


def idle_crowd(base_fds):
    """10,000 connections at once that send nothing: once the server has accepted them
    (its descriptors up by 10,000; at most 0.5 s, well within their 1 s idle timeout),
    /hello is served meanwhile in under 100 ms (19 of 20 probes, from the request sent:
    hello_times; the 20th within 1 s: the crowd's 10,000 green processes and the store the
    earlier cases filled make a full collection of 40-80 MiB, and a probe that meets it
    waited 300-500 ms, with b6ff9d5's VM as with this one, in and out of CI), and once the 1 s idle timeout has closed them the descriptor count is back
    at its baseline and RSS within 16 MiB of its own. (A probe sent before then waits
    behind the kernel's queue of connections not yet accepted: 50 to 470 ms on this
    2-core machine, with this VM and b6ff9d5's alike, which measures the accepting, not
    the serving beside idle connections.)"""
    rss0 = rss_kib()
    idle = []
    try:
        for _ in range(10000):
            idle.append(socket.create_connection(("127.0.0.1", PORT), timeout=10))
    except OSError as e:
        for c in idle:
            c.close()
        return check("10,000 idle connections", False, "after %d: %r" % (len(idle), e))
    accepted = time.monotonic()
    while fd_count() < base_fds + 10000 and time.monotonic() - accepted < 0.5:
        time.sleep(0.01)
    accepted = time.monotonic() - accepted
    probes = [hello_times() for _ in range(20)]
    times = sorted(ms or 1e9 for ms, _ in probes)
    worst, second = times[-1], times[-2]
    connect = max(c for _, c in probes)
    back = False
    for _ in range(100):
        if fd_count() == base_fds:
            back = True
            break
        time.sleep(0.1)
    for c in idle:
        c.close()
    grew = rss_kib() - rss0
    check("10,000 concurrent idle connections: %.2f s for the server to accept them, then /hello served in at most %.0f ms "
          "but one (%.0f ms; the client's connects at most %.0f ms); closed after the idle timeout, descriptors back to "
          "%d, RSS +%d KiB (under 16 MiB)" % (accepted, second, worst, connect, base_fds, grew),
          second < 100 and worst < 1000 and back and grew < 16384, "fds %d" % fd_count())


try:
    out_of_descriptors()
    probes()
    routes()
    trace_context()
    work()
    static()
    connections()
    malformed()
    limits()
    time.sleep(0.2)
    base = fd_count()
    disconnects(base)
    smuggling()
    body_in_pieces()
    head_in_pieces()
    slow_reader(base)
    store_full(base)
    idle_crowd(base)
    slow()
    sequential(base)
    check("the server is still running", SERVER.poll() is None, "exit %s" % SERVER.poll())
finally:
    SERVER.kill()
    err = SERVER.stderr.read()
    errors = [line for line in err.splitlines() if not line.startswith("    ")]
    check("the server's stderr: only the 500's error, with its route, then its backtrace",
          errors == ["ERROR: a File(examples/http/static/docs) readAll: Is a directory (errno 21) (GET /static)"] and
          "    at Static>>handle: (Static.som:17)" in err.splitlines(), err[:2000])
