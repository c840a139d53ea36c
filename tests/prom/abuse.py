#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/prom/abuse.py - sqstat as an exporter under abuse, against a real Prometheus
that scrapes it every second (run by tests/prom_abuse.sh; security review, findings 5,
6 and 7). Three abusers, one after another:

- routes: a VM (tests/prom/Routes.som) that makes 10,000 requests on 10,000 distinct
  routes of 4,000+ bytes with 1,000 statuses. Its series must stay within the bounds
  (32 routes and 16 codes of its own, the rest "other"; labels of at most 128 bytes),
  and every request must be in its histograms or in sqstat_lost_observations_total
  (the kernel's map holds 8,192 histograms), none twice;
- start flood: a fake VM binary (tests/family/fakestart.c) whose 10,000 children fire
  vm__start and _exit, as fast as they fork, under a second exporter (sqstat --vm
  fakestart, scraped as the job "flood"). No fake row may be left after it. 10,000 is
  more than twice the tools' table of VMs (SQ_MAX_VMS, 4,096), and a fork here costs
  about 1.1 ms (fakestart alone: 22.7 s for 20,000, which a 30 s wait did not always
  cover on a busy machine);
- slow clients: 64 connections that send one byte each and hold on.

Throughout, every scrape must succeed: Prometheus's up is 1 at every scrape, each
scrape_duration_seconds is under 1 s (the scrape timeout), and a /metrics response is
under 10 MB. Prints one line per case (tests/prom/promlib.py)."""
import argparse
import os
import socket
import time

from promlib import check, drive, get, parse_metrics, start_prometheus, start_sqstat, wait_for

REQUESTS = 10000
ROUTES_PER_VM, CODES_PER_VM, LABEL_MAX = 32, 16, 128
SIZE_MAX = 10 * 1000 * 1000
FLOOD = 10000


def scrapes_ok(prom, job, what, t0):
    """up was 1 at every scrape of job since t0, and no scrape took 1 s or more."""
    span = max(2, int(time.time() - t0))
    sel = f'{{job="{job}"}}[{span}s]'
    n = prom.value(f"count_over_time(up{sel})")
    up = prom.value(f"min_over_time(up{sel})")
    slowest = prom.value(f"max_over_time(scrape_duration_seconds{sel})")
    check(f"prometheus, {what}: up 1 at all {int(n or 0)} scrapes of the last {span} s, the slowest "
          f"{(slowest or 0) * 1000:.0f} ms", n is not None and n >= span - 2 and up == 1.0 and
          slowest is not None and slowest < 1.0, f"scrapes {n} min(up) {up} max(duration) {slowest}")


def metrics(port, what):
    """/metrics, checked for its size (and answered at all)."""
    st, _, body = get(port)
    check(f"sqstat, {what}: /metrics answered 200, {len(body)} bytes (under 10 MB)",
          st == 200 and len(body) < SIZE_MAX, f"{st}, {len(body)} bytes")
    return parse_metrics(body.decode())


def wait_scrapes(prom, job, n):
    """Until Prometheus has begun n more scrapes of job."""
    t = time.time()
    wait_for(f"{n} scrapes", lambda: (prom.value(f'timestamp(up{{job="{job}"}})') or 0) > t + n - 1, n + 10)


def check_routes(procs, a, prom, port):
    go, stop = os.path.join(a.tmp, "routes.go"), os.path.join(a.tmp, "routes.stop")
    vm = procs.start("routes", [a.vm, os.path.join(a.dir, "Routes.som"), go, stop])
    wait_for("the routes VM in /metrics",
             lambda: any(n == "sqvm_info" and l.get("pid") == str(vm.pid) for n, l, v in parse_metrics(get(port)[2].decode())), 10)
    t0 = time.time()
    open(go, "w").close()
    wait_for("the requests' end", lambda: "done" in procs.text("routes", "err"), 20)
    wait_scrapes(prom, "sqstat", 3)
    samples = [(n, l, v) for n, l, v in metrics(port, "10,000 routes") if l.get("pid") == str(vm.pid) or not l]
    series = [l for n, l, v in samples if n == "sqvm_request_duration_seconds_count"]
    routes = {l["route"] for l in series}
    codes = {l["code"] for l in series}
    longest = max((len(l["route"].encode()) for l in series), default=0)
    check(f"sqstat: 10,000 routes of 4 KiB and 1,000 statuses are {len(series)} series: {len(routes)} routes "
          f"(32 and 'other'), {len(codes)} codes (at most 16 and 'other'), labels of at most 128 bytes",
          len(routes) == ROUTES_PER_VM + 1 and "other" in routes and "other" in codes and
          len(codes) <= CODES_PER_VM + 1 and longest <= LABEL_MAX and
          all(r == "other" or r.startswith("GET /xxx") and "...#" in r for r in routes),
          f"{len(routes)} routes, codes {sorted(codes)}, longest {longest}")
    value = {}
    for n, l, v in samples:
        value[n] = value.get(n, 0) + float(v)
    req, lost = value.get("sqvm_request_duration_seconds_count", 0), value.get("sqstat_lost_observations_total", 0)
    gcs = value.get("sqvm_young_collections_total", 0) + value.get("sqvm_full_collections_total", 0)
    check(f"sqstat: no request counted twice or dropped unseen: {req:.0f} in the histograms (the kernel's map "
          f"holds 8,192), {lost:.0f} counted lost, and the lost at most the rest of the 10,000 plus the "
          f"{gcs:.0f} collections", 0 < req <= REQUESTS and req + lost >= REQUESTS and lost <= REQUESTS - req + gcs,
          f"{value}")
    scrapes_ok(prom, "sqstat", "10,000 routes", t0)
    return vm, stop


def check_flood(procs, a, prom, flood_port):
    """The flood exporter (sqstat --vm fakestart) while FLOOD fake VMs start and end."""
    go = os.path.join(a.tmp, "flood.go")
    t0 = time.time()
    p = procs.start("flood", [a.fake, str(FLOOD), "exit", go])
    open(go, "w").close()
    metrics(flood_port, "during a flood of vm__start")
    p.wait(timeout=40)
    wait_scrapes(prom, "flood", 3)
    check(f"start flood: {FLOOD} fake VMs started and ended", p.returncode == 0 and "done" in procs.text("flood", "err"),
          procs.text("flood", "err")[-200:])
    scrapes_ok(prom, "flood", f"a flood of {FLOOD} vm__start", t0)
    info = [l for n, l, v in metrics(flood_port, "after the flood") if n == "sqvm_info"]
    fakes = [l for l in info if "fakestart" in l.get("cmdline", "")]
    check("start flood: no fake VM's row left once they are gone", not fakes, f"{len(fakes)} fake rows")


def check_slow_clients(prom, port):
    slow = []
    for _ in range(64):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"G")
        slow.append(s)
    t0 = time.time()
    time.sleep(0.2)
    try:
        st = get(port)[0]
    except OSError as e:
        st = e
    check("slow clients: with 64 connections that sent one byte, a scrape is answered", st == 200, st)
    wait_scrapes(prom, "sqstat", 3)
    scrapes_ok(prom, "sqstat", "64 slow clients", t0)
    for s in slow:
        s.close()


def run(procs, a):
    _, port = start_sqstat(procs, a.sqstat, ["--vm", a.vm, "1"])
    _, flood_port = start_sqstat(procs, a.sqstat, ["--vm", a.fake, "1"], name="sqstat-flood")
    prom = start_prometheus(procs, a.prometheus, a.tmp, {"sqstat": port, "flood": flood_port})
    for job in ("sqstat", "flood"):    # scraping, before any abuser comes
        wait_for(f"the {job} job's scrapes", lambda: prom.value(f'count_over_time(up{{job="{job}"}}[10s])'), 10)
    vm, stop = check_routes(procs, a, prom, port)
    check_flood(procs, a, prom, flood_port)
    check_slow_clients(prom, port)
    open(stop, "w").close()
    vm.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vm", "fake", "sqstat", "prometheus", "dir", "tmp"):
        ap.add_argument("--" + opt, required=True)
    a = ap.parse_args()
    drive("prom_abuse", a.tmp, lambda procs: run(procs, a))


if __name__ == "__main__":
    main()
