#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/prom/promtest.py - sqstat as a Prometheus exporter, against a real Prometheus
and a real node_exporter (Debian's), run by tests/prom.sh.

sqstat --listen serves /metrics and writes --prom's file; node_exporter's textfile
collector reads that file; Prometheus scrapes both every second. The workload
(tests/prom/Paced.som) makes exactly 40,000 calls and 40,000 objects, 5,000 of each a
second, and young collections as it goes. The test asks Prometheus (its HTTP API,
PromQL) for the call and allocation rates (5,000/s within 15%: the rate comes from
samples a second apart of a counter that steps ten times a second), the totals (exactly
40,000 more at the end than before the start, through both paths), and the young-GC
p99 (histogram_quantile), which must be exactly what Prometheus's rule gives on the
buckets sqstat serves; the histogram's count and sum must equal the VM's own counters.
A second VM (tests/prom/Requests.som) makes a known number of requests per route and
status: sqvm_request_duration_seconds must count exactly those, and its quantiles must
be the rule's on sqstat's buckets.
It also drives the HTTP server directly: every status it answers, keep-alive,
pipelining, HEAD, concurrent scrapers, slow and malformed clients that must not wedge
it, and VMs that come and go.

Ports are the kernel's (every server listens on 127.0.0.1:0 and the test reads which
port it got from /proc); every process it starts dies with it (PR_SET_PDEATHSIG), and
tests/prom.sh runs it under a timeout. Prints one line per case: PASS name, FAIL name
<TAB> detail, SKIP name <TAB> reason."""
import argparse
import os
import re
import signal
import socket
import subprocess
import threading
import time

CALLS = 40000          # Paced.som: 80 rounds of 500
# Requests.som: (route, code) -> requests; a /slow one takes at least 20 ms
REQUESTS = {("GET /fast", "200"): 30, ("GET /slow", "200"): 12, ("GET /item", "200"): 7,
            ("GET /item", "404"): 3, ("GET /gone", "-1"): 1}
SLOW_S = 0.020
RATE = 5000.0          # per second
RATE_TOLERANCE = 0.15

from promlib import (CTYPE, Conn, check, drive, get, parse_metrics, report, start_prometheus,  # noqa: F401
                     start_sqstat, wait_for, listen_port)


def quantile(q, buckets):
    """Prometheus's histogram_quantile on [(le, cumulative count)], le ascending."""
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_n = 0.0, 0.0
    for le, n in buckets:
        if n >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_n) / (n - prev_n))
        prev_le, prev_n = le, n
    return None


# ---- the HTTP server, directly ----------------------------------------------------------

def http_statuses(port):
    st, h, body = get(port)
    check("http GET /metrics: 200, the exposition's Content-Type, Content-Length of the body",
          st == 200 and h.get("content-type") == CTYPE and int(h["content-length"]) == len(body) and
          b"# TYPE sqvm_gc_pause_seconds histogram" in body, f"{st} {h}")
    with Conn(port) as c:
        c.send(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        st1, h1, _ = c.response(head=True)
        st2, _, body2 = c.response()
    check("http HEAD: GET's headers and no body (the next response follows at once); 404 for another "
          "path, on the same connection", st1 == 200 and int(h1["content-length"]) > 1000 and st2 == 404 and
          body2 == b"404 Not Found\n", f"{st1} {h1} {st2} {body2!r}")
    st, _, _ = get(port, "/metrics?name[]=x")
    check("http GET /metrics?query: the query is not part of the path", st == 200, st)
    cases = [
        ("POST /metrics: 405 with Allow", b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405),
        ("garbage: 400", b"HELLO\r\n\r\n", 400),
        ("HTTP/2.0: 505", b"GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("HTTP/1.1 without Host: 400", b"GET /metrics HTTP/1.1\r\n\r\n", 400),
        ("a request body: 400", b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("9 KiB of headers: 431", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 9216 + b"\r\n\r\n", 431),
        ("a NUL in a header: 400", b"GET /metrics HTTP/1.1\r\nHost: x\0\r\n\r\n", 400),
    ]
    for name, raw, want in cases:
        with Conn(port) as c:
            c.send(raw)
            st, h, body = c.response()
            closes = want != 405
            ok = st == want and (want != 405 or h.get("allow") == "GET, HEAD") and \
                (not closes or (h.get("connection") == "close" and c.closed_by_server()))
        check(f"http {name}" + (", and the connection closed" if closes else ""), ok, f"{st} {h} {body[:80]!r}")


def http_connections(port, sq_pid):
    with Conn(port) as c:
        c.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
        got = [c.response()[0] for _ in range(3)]
    check("http pipelining: three requests in one packet, three responses in order on one connection",
          got == [200, 200, 200], got)

    # The review's 282 pipelined requests in one write, the client's side shut after them:
    # each answered (from a loop, PIPELINE_MAX a turn), and the exporter's stack not grown
    # by them (answered recursively, they took it to 2.3 MB).
    with Conn(port) as c:
        c.send(b"GET /metrics HTTP/1.1\nhost:\n\n" * 282)
        c.s.shutdown(socket.SHUT_WR)
        got = [c.response()[0] for _ in range(282)]
        closed = c.closed_by_server()
    stack_kb = int(re.search(r"VmStk:\s+(\d+) kB", open(f"/proc/{sq_pid}/status").read()).group(1))
    check("http 282 pipelined requests in one write, then the client's side shut: 282 answers, "
          "then closed, the exporter's stack under 512 kB",
          got == [200] * 282 and closed and stack_kb < 512, f"{len(got)} answers, closed {closed}, VmStk {stack_kb} kB")
    with Conn(port) as c:
        c.send(b"GET /metrics HTTP/1.0\r\n\r\n")
        st, h, _ = c.response()
        ok10 = st == 200 and h.get("connection") == "close" and c.closed_by_server()
    check("http HTTP/1.0: answered, then closed", ok10, f"{st} {h}")

    idle = [Conn(port) for _ in range(70)]
    time.sleep(0.2)
    t0 = time.time()
    st, _, _ = get(port)
    check("http 70 idle connections (of 64 allowed): a scrape still answered at once, the idlest gave way",
          st == 200 and time.time() - t0 < 2, f"{st} after {time.time() - t0:.2f}s")
    for c in idle:
        c.s.close()

    hog = Conn(port)
    hog.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 300)    # and never reads
    time.sleep(0.3)
    t0 = time.time()
    st, _, _ = get(port)
    check("http a client that never reads its 300 responses: others are answered at once",
          st == 200 and time.time() - t0 < 2, f"{st} after {time.time() - t0:.2f}s")
    hog.s.close()

    statuses, lock = [], threading.Lock()

    def scraper():
        for _ in range(10):
            r = get(port)[0]
            with lock:
                statuses.append(r)
    threads = [threading.Thread(target=scraper) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("http 8 concurrent scrapers, 10 scrapes each: 80 answers, all 200",
          statuses.count(200) == 80, statuses)


# ---- the whole: sqstat, node_exporter, Prometheus, the workload ---------------------------

def start_servers(procs, a, textdir):
    sq, sq_port = start_sqstat(procs, a.sqstat, ["--vm", a.vm, "--prom", os.path.join(textdir, "sqvm.prom"), "0.5"])
    node = procs.start("node", [a.node_exporter, "--web.listen-address=127.0.0.1:0", "--collector.disable-defaults",
                                "--collector.textfile", f"--collector.textfile.directory={textdir}"])
    node_port = wait_for("node_exporter's port", lambda: listen_port(node.pid), 10)
    prom = start_prometheus(procs, a.prometheus, a.tmp, {"sqstat": sq_port, "node": node_port})
    return sq, sq_port, prom


def series(job, pid):
    return f'{{job="{job}",pid="{pid}"}}'


def check_totals(prom, pid, t_go):
    """Exact: 40,000 calls and objects between the last sample before go and the end."""
    for job in ("sqstat", "node"):
        got, raw = [], []
        for m in ("sqvm_activations_total", "sqvm_allocations_total"):
            before = prom.value(m + series(job, pid), t_go - 0.01)
            after = prom.value(m + series(job, pid))
            got.append(None if before is None or after is None else after - before)
            if got[-1] is None:  # what Prometheus had, for the failure's report
                raw.append((m, prom.query(m + series(job, pid), t_go - 0.01), prom.query(m + series(job, pid))))
        check(f"prometheus, {job} job: sqvm_activations_total and sqvm_allocations_total rose by exactly "
              f"{CALLS} each over the run", got == [CALLS, CALLS], f"{got} at go-0.01 and now: {raw}")


def check_rates(prom, pid, t_go):
    """rate() over [5s], 2 to 7 s into the 8 s of work: 5,000 a second."""
    for job in ("sqstat", "node"):
        rates = [prom.value(f"rate({m}{series(job, pid)}[5s])", t_go + 7.0)
                 for m in ("sqvm_activations_total", "sqvm_allocations_total")]
        ok = all(r is not None and abs(r - RATE) <= RATE * RATE_TOLERANCE for r in rates)
        check(f"prometheus, {job} job: rate() of calls and of allocations 5000/s within 15% "
              f"({', '.join('%.0f' % r if r is not None else 'none' for r in rates)})", ok, rates)


def check_gc(prom, pid, sq_port):
    """The young-GC histogram: p99 by PromQL against the rule on sqstat's own buckets; its
    count and sum against the VM's counters."""
    _, _, body = get(sq_port)
    samples = [(n, l, v) for n, l, v in parse_metrics(body.decode()) if l.get("pid") == str(pid)]
    buckets = sorted((float(l["le"]), float(v)) for n, l, v in samples
                     if n == "sqvm_gc_pause_seconds_bucket" and l.get("kind") == "young")
    want = quantile(0.99, buckets)
    sel = f'{{job="sqstat",pid="{pid}",kind="young"}}'
    p99 = prom.value(f"histogram_quantile(0.99, sqvm_gc_pause_seconds_bucket{sel})")
    check(f"prometheus: histogram_quantile(0.99) of the young pauses = {p99} s, what the rule gives on "
          f"sqstat's {len(buckets)} buckets", p99 is not None and want is not None and p99 > 0 and
          abs(p99 - want) <= 1e-12 * want, f"{p99} vs {want}")
    count = prom.value(f"sqvm_gc_pause_seconds_count{sel}")
    total = prom.value(f'sqvm_young_collections_total{series("sqstat", pid)}')
    psum = prom.value(f"sqvm_gc_pause_seconds_sum{sel}")
    secs = prom.value(f'sqvm_young_collection_seconds_total{series("sqstat", pid)}')
    check(f"prometheus: the histogram's _count ({count}) and _sum equal the VM's young collections "
          f"and their pause time", count is not None and count >= 50 and count == total and
          psum is not None and abs(psum - secs) < 1e-9, f"count {count} total {total} sum {psum} secs {secs}")
    return count


def check_vm_gc_stats(procs, count):
    m = re.search(r"gc: young (\d+)", procs.text("paced", "err"))
    check(f"the VM's own --gc-stats: {m.group(1) if m else '?'} young collections, as the histogram counted",
          m is not None and float(m.group(1)) == count, procs.text("paced", "err")[-300:])


def check_scrapes(prom):
    ups = [prom.value(f'min_over_time(up{{job="{j}"}}[60s])') for j in ("sqstat", "node")]
    err = prom.value('node_textfile_scrape_error{job="node"}')
    check("prometheus: both targets up at every scrape, node_exporter read --prom's file without error",
          ups == [1.0, 1.0] and err == 0.0, f"up {ups}, textfile error {err}")



def wait_first_samples(prom, pid, what):
    """Until both jobs have scraped VM pid once."""
    for job in ("sqstat", "node"):
        wait_for(f"the {job} job's first sample of {what}",
                 lambda: prom.value("sqvm_allocations_total" + series(job, pid)) is not None, 20)


def wait_samples_after(prom, pid, t, what):
    """Until both jobs have a sample of VM pid taken well after t (the file that
    node_exporter reads is rewritten every 0.5 s)."""
    for job in ("sqstat", "node"):
        wait_for(f"the {job} job's sample after {what}", lambda: (prom.value(
            "timestamp(sqvm_allocations_total" + series(job, pid) + ")") or 0) > t + 0.6, 10)


def run_requests(procs, a, prom):
    """Requests.som in a VM of its own, up to the scrapes after its 'done'."""
    go, stop = os.path.join(a.tmp, "req.go"), os.path.join(a.tmp, "req.stop")
    vm = procs.start("requests", [a.vm, os.path.join(a.dir, "Requests.som"), go, stop])
    wait_first_samples(prom, vm.pid, "the requests VM")
    open(go, "w").close()
    wait_for("the requests' end", lambda: "done" in procs.text("requests", "err"), 20)
    wait_samples_after(prom, vm.pid, time.time(), "the requests")
    return vm, stop


def request_buckets(samples, route=None):
    """[(le, cumulative count)] of the request histogram in sqstat's own samples, summed
    over the codes (and the routes, if route is None), le ascending."""
    by_le = {}
    for n, l, v in samples:
        if n == "sqvm_request_duration_seconds_bucket" and route in (None, l["route"]):
            by_le[float(l["le"])] = by_le.get(float(l["le"]), 0.0) + float(v)
    return sorted(by_le.items())


def check_requests(prom, pid, sq_port):
    """sqvm_request_duration_seconds: exact counts per route and code (through both
    paths), histogram_quantile equal to the rule on sqstat's buckets, and the /slow
    requests' durations above their Delay."""
    samples = [(n, l, v) for n, l, v in parse_metrics(get(sq_port)[2].decode()) if l.get("pid") == str(pid)]
    counts = {(l["route"], l["code"]): int(v) for n, l, v in samples if n == "sqvm_request_duration_seconds_count"}
    check(f"sqstat: sqvm_request_duration_seconds_count per route and code exactly as Requests.som made them "
          f"({len(REQUESTS)} series; the abandoned request's code -1)", counts == REQUESTS, counts)
    for job in ("sqstat", "node"):
        got = {(r["metric"]["route"], r["metric"]["code"]): float(r["value"][1]) for r in prom.query(
            f'sqvm_request_duration_seconds_count{series(job, pid)}')}
        per_route = {r["metric"]["route"]: float(r["value"][1]) for r in prom.query(
            f'sum by (route) (sqvm_request_duration_seconds_count{series(job, pid)})')}
        want_route = {}
        for (route, _), n in REQUESTS.items():
            want_route[route] = want_route.get(route, 0) + n
        check(f"prometheus, {job} job: the request counts per route and code, and summed by route "
              f"(GET /item: 10)", got == {k: float(v) for k, v in REQUESTS.items()} and
              per_route == {k: float(v) for k, v in want_route.items()}, f"{got} {per_route}")
    bad = []
    for route, q in (("GET /fast", 0.5), ("GET /slow", 0.9), ("GET /item", 0.99), (None, 0.5), (None, 0.95)):
        want = quantile(q, request_buckets(samples, route))
        sel = f'job="sqstat",pid="{pid}"' + (f',route="{route}"' if route else "")
        got = prom.value(f"histogram_quantile({q}, sum by (le) (sqvm_request_duration_seconds_bucket{{{sel}}}))")
        if got is None or want is None or not got > 0 or abs(got - want) > 1e-12 * want:
            bad.append((route, q, got, want))
    check("prometheus: histogram_quantile of the request durations (per route, and over all of them) equals "
          "the rule on sqstat's buckets", not bad, bad)
    slow = request_buckets(samples, "GET /slow")
    below = [n for le, n in slow if le < SLOW_S]
    ssum = prom.value(f'sqvm_request_duration_seconds_sum{{job="sqstat",pid="{pid}",route="GET /slow"}}')
    p50 = prom.value(f'histogram_quantile(0.5, sqvm_request_duration_seconds_bucket{{job="sqstat",pid="{pid}",'
                     f'route="GET /slow"}})')
    check("prometheus: no /slow request in a bucket below its 20 ms Delay, their _sum at least 12 x 20 ms, "
          "their median above 16.384 ms", below and max(below) == 0 and ssum is not None and ssum >= 12 * SLOW_S
          and p50 is not None and p50 > 0.016384, f"below {below} sum {ssum} p50 {p50}")


def check_come_and_go(procs, a, sq_port):
    """A VM with quotes, a backslash and a newline in its command line: escaped in its
    labels; once it exits its series go, and the exporter stays."""
    stop = os.path.join(a.tmp, "sleeper.stop")
    odd = 'say "hi"\\now\nthen'
    vm = procs.start("sleeper", [a.vm, os.path.join(a.family, "Sleeper.som"), stop, odd])

    def labels():
        text = get(sq_port)[2].decode()
        return [l for n, l, v in parse_metrics(text) if n == "sqvm_info" and l.get("pid") == str(vm.pid)]
    try:
        found = wait_for("the sleeper in /metrics", labels, 10)
        raw = [line for line in get(sq_port)[2].decode().splitlines()
               if line.startswith("sqvm_info{") and f'pid="{vm.pid}"' in line]
        counters = [line for line in get(sq_port)[2].decode().splitlines()
                    if line.startswith("sqvm_allocations_total{") and f'pid="{vm.pid}"' in line]
        check("sqstat: a VM that starts later appears; its cmdline label, on sqvm_info only, escaped "
              "(\\\" and \\\\), its newline a space", found[0]["cmdline"].endswith('say "hi"\\now then') and
              raw and raw[0].count('say \\"hi\\"\\\\now then') == 1 and raw[0].endswith(" 1") and
              counters == [f'sqvm_allocations_total{{pid="{vm.pid}"}} ' + counters[0].split()[-1]], (raw, counters))
    except TimeoutError as e:
        check("sqstat: a VM that starts later appears", False, e)
    open(stop, "w").close()
    vm.wait(timeout=10)
    try:
        wait_for("the sleeper gone from /metrics", lambda: not labels(), 5)
        gone = True
    except TimeoutError:
        gone = False
    check("sqstat: once that VM exits its series go, and the exporter goes on serving",
          gone and get(sq_port)[0] == 200, "still there" if not gone else "no answer")


def check_promtool(a, sq_port, textdir):
    body = get(sq_port)[2]
    for what, data in (("/metrics", body), ("--prom's file", open(os.path.join(textdir, "sqvm.prom"), "rb").read())):
        r = subprocess.run([a.promtool, "check", "metrics"], input=data, capture_output=True)
        check(f"promtool check metrics: {what} is clean", r.returncode == 0 and not r.stdout.strip() and
              not r.stderr.strip(), (r.stdout + r.stderr).decode())
    left = [f for f in os.listdir(textdir) if f != "sqvm.prom"]
    check("--prom: only the file itself in the folder (temporary files renamed, none left)", not left, left)


def run_workload(procs, a, prom):
    go, stop = os.path.join(a.tmp, "go"), os.path.join(a.tmp, "stop")
    vm = procs.start("paced", [a.vm, "--young", "256K", "--gc-stats", os.path.join(a.dir, "Paced.som"), go, stop])
    wait_first_samples(prom, vm.pid, "the VM")
    # A sample is stamped when its scrape began and found once the scrape is stored,
    # which may be less than check_totals' 10 ms before now: go only once the newest is
    # older than that, so that the query before go finds it (CI once found none).
    newest = max(prom.value("timestamp(sqvm_allocations_total" + series(job, vm.pid) + ")") or 0
                 for job in ("sqstat", "node"))
    time.sleep(max(0.0, newest + 0.05 - time.time()))
    t_go = time.time()
    open(go, "w").close()
    wait_for("the workload's end", lambda: "done" in procs.text("paced", "err"), 30)
    wait_samples_after(prom, vm.pid, time.time(), "the end")
    return vm, stop, t_go


def run(procs, a, textdir):
    sq, sq_port, prom = start_servers(procs, a, textdir)
    slow = Conn(sq_port)
    slow.send(b"GET /metr")                 # and no more: the server must end it
    t_slow = time.time()
    http_statuses(sq_port)
    http_connections(sq_port, sq.pid)
    vm, stop, t_go = run_workload(procs, a, prom)
    check_totals(prom, vm.pid, t_go)
    check_rates(prom, vm.pid, t_go)
    count = check_gc(prom, vm.pid, sq_port)
    check_scrapes(prom)
    rvm, rstop = run_requests(procs, a, prom)
    check_requests(prom, rvm.pid, sq_port)
    check_come_and_go(procs, a, sq_port)
    check_promtool(a, sq_port, textdir)
    open(rstop, "w").close()
    rvm.wait(timeout=10)
    ended = slow.closed_by_server(timeout=max(0.5, t_slow + 12 - time.time()))
    check(f"http a request that never ends: closed by the server after its 10 s "
          f"({time.time() - t_slow:.1f} s after it began)", ended and time.time() - t_slow >= 9.5)
    open(stop, "w").close()
    vm.wait(timeout=10)
    check_vm_gc_stats(procs, count)
    sq.send_signal(signal.SIGINT)
    check("sqstat --listen: Ctrl-C ends it, exit 0", sq.wait(timeout=10) == 0, procs.text("sqstat", "err"))


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vm", "sqstat", "prometheus", "node-exporter", "promtool", "dir", "family", "tmp"):
        ap.add_argument("--" + opt, required=True)
    a = ap.parse_args()
    textdir = os.path.join(a.tmp, "textfile")
    os.makedirs(textdir, exist_ok=True)
    drive("prometheus", a.tmp, lambda procs: run(procs, a, textdir))


if __name__ == "__main__":
    main()
