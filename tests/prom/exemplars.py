#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/prom/exemplars.py - sqstat --listen's OpenMetrics and its exemplars, run by
tests/exemplars.sh, against a real Prometheus (Debian's, --enable-feature=exemplar-storage)
and sqreq.

A VM runs tests/prom/Exemplars.som: known requests whose ids it says as they end, one of
them (GET /kv's 13th) alone in its bucket behind a 300 ms Delay. sqreq --slowest 1
follows it. The test:

  - asks /metrics with many Accept headers and checks the Content-Type each gets
    (OpenMetrics only when asked for, by q values and specificity; the text format by
    default and when nothing offered is acceptable) and Vary: Accept;
  - checks the text format as it was (promtool check metrics, its own metadata and le
    spelling, no exemplars, no # EOF) and the OpenMetrics one through the Prometheus
    project's own parser (tests/prom/omparse.py), its le labels canonical, with the same
    request samples as the text format;
  - checks every exemplar of the VM's request histogram: one exactly on each bucket that
    holds a request, its value within that bucket's bounds, its request_id one the VM
    gave that route, the latest request of each route the exemplar of its bucket, its
    time within the run; the slow bucket's the slow request's; the label set at most 128
    code points (a long route cut to fit, exactly; a 65-character route of 125 bytes
    kept whole) and escaped;
  - asks Prometheus's /api/v1/query_exemplars: the slow bucket's exemplar names the
    slow request, and the latest exemplar Prometheus stored for each bucket is the one
    sqstat serves;
  - and sqreq --slowest 1 names the same request: the exemplar's request_id is the id
    the VM's request records carry;
  - and sqslow --over 200ms, attached beside them, captured that request and no other:
    the slow bucket's exemplar, as Prometheus gives it back, names its capture file
    (sqslow-PID-ID-TIME.json), whose request slice has that id.

Prints one line per case: PASS name, FAIL name <TAB> detail, SKIP name <TAB> reason."""
import argparse
import json
import os
import re
import subprocess
import time

from promlib import CTYPE, Conn, check, drive, parse_metrics, start_prometheus, start_sqstat, wait_for

OM_CTYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
# Prometheus 2.42's scrape Accept header (scrape/scrape.go)
PROM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
               "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
HIST = "sqvm_request_duration_seconds"
SLOW_LE = 0.524288     # the bucket of the 300 ms request: (0.262144, 0.524288]
ODD = 'GET /say "hi"\\now\n'
LONG = "GET /" + "x" * 120
WIDE = "GET /" + "\u00fc" * 60
ROUTES = {"kv": "GET /kv", "slow": "GET /kv", "odd": ODD, "long": LONG, "wide": WIDE}


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


# ---- the negotiation ---------------------------------------------------------------------

# (the Accept headers of a request, the Content-Type it must get)
NEGOTIATION = [
    ([], CTYPE),
    (["text/plain"], CTYPE),
    (["text/plain;version=0.0.4"], CTYPE),
    ([PROM_ACCEPT], OM_CTYPE),
    (["application/openmetrics-text"], OM_CTYPE),
    (["application/openmetrics-text; version=\"1.0.0\"; charset=utf-8"], OM_CTYPE),
    (["APPLICATION/OpenMetrics-Text;Version=1.0.0"], OM_CTYPE),
    (["application/*"], OM_CTYPE),
    (["*/*"], CTYPE),
    (["application/openmetrics-text;version=1.0.0;q=0.5, text/plain;q=0.9"], CTYPE),
    (["text/plain;q=0.2, application/openmetrics-text;q=0.3"], OM_CTYPE),
    (["text/plain, application/openmetrics-text"], CTYPE),
    (["application/openmetrics-text, text/plain"], OM_CTYPE),
    (["application/openmetrics-text;version=0.0.1"], CTYPE),
    (["application/openmetrics-text;charset=latin1"], CTYPE),
    (["application/openmetrics-text;q=0"], CTYPE),
    (["text/plain;q=0, */*"], OM_CTYPE),
    (["application/openmetrics-text;q=1.5"], CTYPE),
    (["application/json"], CTYPE),
    ([";;;,,, /, q=1"], CTYPE),
    (["text/plain;q=0.1", "application/openmetrics-text"], OM_CTYPE),
]


def scrape(port, accepts=(), head=False):
    """(status, headers, body) of one request with these Accept headers."""
    lines = "".join(f"Accept: {a}\r\n" for a in accepts)
    with Conn(port) as c:
        c.send(f"{'HEAD' if head else 'GET'} /metrics HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode())
        return c.response(head)


def check_negotiation(port):
    bad = []
    for accepts, want in NEGOTIATION:
        st, h, body = scrape(port, accepts)
        om = body.endswith(b"# EOF\n")
        if st != 200 or h.get("content-type") != want or h.get("vary") != "Accept" or om != (want == OM_CTYPE):
            bad.append((accepts, st, h.get("content-type"), h.get("vary"), om))
    check(f"negotiation: {len(NEGOTIATION)} Accept headers, each answered in the format it prefers (q values, "
          "specificity, order; the text format by default and when nothing offered is acceptable), with "
          "Vary: Accept", not bad, bad)
    st, h, body = scrape(port, [PROM_ACCEPT], head=True)
    check("negotiation: HEAD with Prometheus's Accept: OpenMetrics's Content-Type, no body",
          st == 200 and h.get("content-type") == OM_CTYPE and body == b"", (st, h))


# ---- the two formats ---------------------------------------------------------------------

def om_parse(text):
    """The exposition as the Prometheus project's parser reads it, or raises."""
    r = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "omparse.py")],
                       input=text.encode(), capture_output=True, timeout=30)
    if r.returncode != 0:
        raise ValueError(r.stderr.decode()[-500:])
    return json.loads(r.stdout)


def check_text(a, text):
    r = subprocess.run([a.promtool, "check", "metrics"], input=text.encode(), capture_output=True)
    lines = text.splitlines()
    check("text format (no Accept): promtool check metrics is clean", r.returncode == 0 and not r.stdout.strip()
          and not r.stderr.strip(), (r.stdout + r.stderr).decode())
    check("text format as before: HELP before TYPE, counters' families named _total, sqvm_info a gauge, le "
          "written 0.000001, no exemplars, no # EOF",
          lines[0].startswith("# HELP sqvm_info ") and lines[1] == "# TYPE sqvm_info gauge" and
          "# TYPE sqvm_activations_total counter" in lines and any('le="0.000001"' in l for l in lines) and
          not any(" # {" in l or l.startswith("# EOF") or l.startswith("# UNIT") for l in lines), lines[:3])
    st, h, same = scrape(a.port, ["text/plain"])
    check("text format: Accept: text/plain gets it too", st == 200 and h.get("content-type") == CTYPE and
          not same.endswith(b"# EOF\n") and b" # {" not in same, h)


def check_om(text, fams, text_samples, pid):
    lines = text.splitlines()
    meta = [l for l in lines if l.startswith("# ")]
    check("OpenMetrics: the Prometheus project's parser reads it whole; it ends '# EOF'; metadata TYPE, UNIT, HELP "
          "in that order; counters' families named without _total, their samples with; sqvm an info family",
          text.endswith("\n# EOF\n") and "# TYPE sqvm_activations counter" in meta and
          "sqvm_request_duration_seconds" in {f["name"] for f in fams} and
          meta[meta.index("# TYPE sqvm_gc_pause_seconds histogram") + 1] == "# UNIT sqvm_gc_pause_seconds seconds" and
          meta[meta.index("# TYPE sqvm_gc_pause_seconds histogram") + 2].startswith("# HELP sqvm_gc_pause_seconds ") and
          {f["name"]: f["type"] for f in fams}.get("sqvm") == "info" and
          all(s["name"].endswith("_total") for f in fams if f["type"] == "counter" for s in f["samples"]), meta[:6])
    les = {s["labels"]["le"]: s["le_go"] for f in fams for s in f["samples"] if s["le_go"] is not None}
    check(f"OpenMetrics: its {len(les)} le values are canonical (as the Prometheus project renders each number: "
          "1e-06 ... 6.4e-05, 0.000128 ...)", les and all(k == v for k, v in les.items()) and "1e-06" in les,
          {k: v for k, v in les.items() if k != v})
    mine = {}
    for f in fams:
        for s in f["samples"]:
            if s["name"].startswith(HIST) and s["labels"].get("pid") == str(pid):
                mine[(s["name"], tuple(sorted((k, float(v) if k == "le" else v) for k, v in s["labels"].items())))] = \
                    float(s["value"])
    theirs = {(n, tuple(sorted((k, float(v) if k == "le" else v) for k, v in l.items()))): float(v)
              for n, l, v in text_samples if n.startswith(HIST) and l.get("pid") == str(pid)}
    check(f"OpenMetrics and the text format: the same {len(mine)} samples of the VM's request histogram, "
          "values equal (le compared as numbers)", mine and mine == theirs,
          sorted(set(mine.items()) ^ set(theirs.items()))[:6])


# ---- the exemplars -----------------------------------------------------------------------

def series_of(fams, pid):
    """{(route, code): [(le, own count, exemplar)]} of the VM's request histogram."""
    out = {}
    for f in fams:
        if f["name"] != HIST:
            continue
        for s in f["samples"]:
            l = s["labels"]
            if s["name"] == HIST + "_bucket" and l["pid"] == str(pid):
                out.setdefault((l["route"], l["code"]), []).append((float(l["le"]), s["value"], s["exemplar"]))
    for k, b in out.items():
        b.sort(key=lambda x: x[0])
        out[k] = [(le, n - (b[i - 1][1] if i else 0), ex) for i, (le, n, ex) in enumerate(b)]
    return out


def om_escape(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exemplar_route(route, rid):
    """The exemplar's route as sqstat must cut it: 128 code points for all its labels."""
    budget = 128 - len("request_id") - len(str(rid)) - len("route")
    if len(route) <= budget:
        return route
    return route[:budget - 12] + "...#%08x" % fnv1a(route.encode())


def check_exemplars(text, fams, pid, ids, t_go, t_done):
    series = series_of(fams, pid)
    by_route = {}
    for tag, rid in ids:
        by_route.setdefault(ROUTES[tag], []).append(rid)
    bad, shown = [], 0
    for (route, code), buckets in series.items():
        got = []
        for i, (le, own, ex) in enumerate(buckets):
            lo = buckets[i - 1][0] if i else 0.0
            if (ex is not None) != (own > 0):
                bad.append((route, le, "exemplar on an empty bucket" if ex else "no exemplar on a bucket of %d" % own))
                continue
            if ex is None:
                continue
            shown += 1
            rid = int(ex["labels"]["request_id"])
            t = ex["seconds"] + ex["nanos"] / 1e9
            if set(ex["labels"]) != {"request_id", "route"} or ex["labels"]["route"] != exemplar_route(route, rid):
                bad.append((route, le, "labels", ex["labels"]))
            if not lo < ex["value"] <= le:
                bad.append((route, le, "value out of its bucket", ex["value"]))
            if rid not in by_route.get(route, []):
                bad.append((route, le, "an id the VM did not give this route", rid))
            if not t_go - 0.5 <= t <= t_done + 0.5:
                bad.append((route, le, "time outside the run", t, t_go, t_done))
            got.append(rid)
        if route in by_route and max(got, default=None) != max(by_route[route]):
            bad.append((route, "the latest request is no bucket's exemplar", got, max(by_route[route])))
    check(f"exemplars: {shown} on the VM's request buckets, one exactly on each bucket that holds a request, "
          "each within its bucket, naming a request of its route that the VM reported, the latest request of "
          "each route among them, times within the run", not bad and shown >= 5 and
          set(r for r, _ in series) == set(by_route), bad[:5])
    slow = [rid for tag, rid in ids if tag == "slow"]
    kv = series.get(("GET /kv", "200"), [])
    in_slow = [(own, ex) for le, own, ex in kv if le == SLOW_LE]
    ok = (len(slow) == 1 and in_slow and in_slow[0][0] == 1 and in_slow[0][1] is not None and
          in_slow[0][1]["labels"] == {"request_id": str(slow[0]), "route": "GET /kv"} and in_slow[0][1]["value"] >= 0.3)
    check(f"exemplars: the slow bucket of GET /kv (le={SLOW_LE}) holds one request, its exemplar the slow one "
          f"(request_id {slow[0] if slow else '?'}, at least 300 ms)", ok, in_slow)
    longs = [ex for (route, _), b in series.items() if route == LONG for _, _, ex in b if ex]
    sizes = [sum(len(k) + len(v) for k, v in ex["labels"].items()) for ex in longs]
    check("exemplars: a 125-character route cut to fit 128 code points exactly (its first 99 characters, '...#' "
          "and the FNV-1a hash of the whole)", longs and sizes == [128] * len(longs), sizes)
    wides = [ex["labels"]["route"] for (route, _), b in series.items() if route == WIDE for _, _, ex in b if ex]
    check("exemplars: a route of 65 characters in 125 bytes kept whole (the bound counts code points)",
          wides and all(w == WIDE for w in wides), wides)
    odd = [l for l in text.splitlines() if l.startswith(HIST + "_bucket{") and f'pid="{pid}"' in l and " # {" in l
           and 'route="GET /say \\"hi\\"\\\\now\\n"' in l.split(" # ")[1]]
    check("exemplars: a route with a quote, a backslash and a newline escaped in the exemplar's labels",
          odd != [], [l for l in text.splitlines() if "say" in l][:2])
    return series


# ---- Prometheus ----------------------------------------------------------------------------

def check_prometheus(prom, pid, ids, series, t_go):
    slow = [rid for tag, rid in ids if tag == "slow"][0]
    sel = f'{HIST}_bucket{{job="sqstat",pid="{pid}",route="GET /kv",le="{SLOW_LE}"}}'
    data = prom.api("query_exemplars", {"query": sel, "start": f"{t_go - 5:.3f}", "end": f"{time.time() + 1:.3f}"})
    exs = [e for s in data for e in s["exemplars"]]
    served = [ex for le, own, ex in series[("GET /kv", "200")] if le == SLOW_LE][0]
    check(f"prometheus --enable-feature=exemplar-storage: /api/v1/query_exemplars of the slow bucket gives its "
          f"request: request_id {slow}, route GET /kv, sqstat's value and time (ms)", len(data) == 1 and exs and
          all(e["labels"] == {"request_id": str(slow), "route": "GET /kv"} and float(e["value"]) == served["value"] and
              abs(float(e["timestamp"]) - (served["seconds"] + served["nanos"] / 1e9)) < 0.0015 for e in exs),
          (data, served))
    data = prom.api("query_exemplars", {"query": f'{HIST}_bucket{{job="sqstat",pid="{pid}"}}',
                                        "start": f"{t_go - 5:.3f}", "end": f"{time.time() + 1:.3f}"})
    stored = {}
    for s in data:
        latest = max(s["exemplars"], key=lambda e: float(e["timestamp"]))
        labels = dict(latest["labels"])
        # Prometheus 2.42's OpenMetrics parser keeps an exemplar's label values as written,
        # escapes and all (a series' labels it unescapes): what it stored of the route
        # that needs escaping is its escaped text; a Prometheus that unescapes stores it
        # as it is
        if labels.get("route") == om_escape(s["seriesLabels"]["route"]):
            labels["route"] = s["seriesLabels"]["route"]
        stored[(s["seriesLabels"]["route"], float(s["seriesLabels"]["le"]))] = (labels, float(latest["value"]))
    want = {(route, le): (ex["labels"], ex["value"]) for (route, _), b in series.items() for le, _, ex in b if ex}
    check(f"prometheus: the latest exemplar it stored of each of the {len(want)} buckets is the one sqstat serves "
          "(the 128-code-point one of the long route accepted too)", stored == want,
          sorted(set(map(str, stored.items())) ^ set(map(str, want.items())))[:4])
    ups = prom.value(f'min_over_time(up{{job="sqstat"}}[60s])')
    check("prometheus: sqstat up at every scrape (each OpenMetrics exposition parsed)", ups == 1.0, ups)
    # the request the slow bucket's exemplar names, as Prometheus gives it back
    return exs[0]["labels"].get("request_id") if exs else None


def check_sqreq(procs, ids, rq):
    slow = [rid for tag, rid in ids if tag == "slow"][0]
    try:
        rq.wait(timeout=10)
        report = json.loads(procs.text("sqreq").strip().splitlines()[-1])
        got = [(s["id"], s["route"]) for s in report["slowest"]]
    except Exception as e:  # no report: the case says what came instead
        got = f"{type(e).__name__}: {e}: {procs.text('sqreq')[-300:]} {procs.text('sqreq', 'err')[-300:]}"
    check(f"sqreq --slowest 1 names the same request as the slow bucket's exemplar (id {slow}, GET /kv): the "
          "request_id is the id of the VM's request records", got == [(slow, "GET /kv")], got)


def check_capture(procs, a, pid, request_id, sl):
    """The capture that the exemplar's request_id names: one file, the only one."""
    sl.send_signal(2)
    try:
        sl.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    caps = sorted(f for f in os.listdir(a.caps) if f.startswith("sqslow-"))
    named = [f for f in caps if re.fullmatch(rf"sqslow-{pid}-{request_id}-\d{{4}}-\d\d-\d\dT[0-9:.]+Z?[+-0-9:]*\.json", f)]
    slices = []
    if len(named) == 1:
        try:
            ev = json.load(open(os.path.join(a.caps, named[0])))["traceEvents"]
            slices = [e for e in ev if e.get("cat") == "request" and str(e.get("args", {}).get("request_id")) ==
                      str(request_id)]
        except (OSError, ValueError, KeyError) as e:
            slices = [repr(e)]
    check(f"sqslow: the slow bucket's exemplar (request_id {request_id}) names its capture, the only one, whose "
          "request slice has that id", caps == named and len(named) == 1 and len(slices) == 1 and
          isinstance(slices[0], dict) and slices[0]["dur"] >= 300000,
          (caps, slices[:1], procs.text("sqslow")[-300:], procs.text("sqslow", "err")[-300:]))


def run(procs, a):
    sq, a.port = start_sqstat(procs, a.sqstat, ["--vm", a.vm, "0.5"])
    prom = start_prometheus(procs, a.prometheus, a.tmp, {"sqstat": a.port},
                            flags=["--enable-feature=exemplar-storage"])
    go, stop = os.path.join(a.tmp, "ex.go"), os.path.join(a.tmp, "ex.stop")
    vm = procs.start("exemplars", [a.vm, os.path.join(a.dir, "Exemplars.som"), go, stop])
    rq = procs.start("sqreq", [a.sqreq, "-j", "--slowest", "1", "-p", str(vm.pid)])
    wait_for("sqreq's Tracing line", lambda: "Tracing" in procs.text("sqreq") + procs.text("sqreq", "err"), 20)
    a.caps = os.path.join(a.tmp, "captures")
    os.makedirs(a.caps, exist_ok=True)
    sl = procs.start("sqslow", [a.sqslow, "--over", "200ms", "-w", "1s", "--out", a.caps, "-p", str(vm.pid)])
    wait_for("sqslow's Tracing line", lambda: "Tracing" in procs.text("sqslow") + procs.text("sqslow", "err"), 20)
    wait_for("Prometheus's first sample of the VM",
             lambda: prom.value(f'sqvm_info{{job="sqstat",pid="{vm.pid}"}}') is not None, 20)
    t_go = time.time()
    open(go, "w").close()
    wait_for("the requests' end", lambda: "done" in procs.text("exemplars", "err"), 30)
    t_done = time.time()
    ids = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^(kv|slow|odd|long|wide) (\d+)$",
                                                               procs.text("exemplars", "err"), re.M)]
    check("the workload: 31 requests, ids 1 to 31 in order, the 13th the slow one",
          [i for _, i in ids] == list(range(1, 32)) and ids[12] == ("slow", 13), ids)
    check_negotiation(a.port)
    _, _, text = scrape(a.port)
    check_text(a, text.decode())
    _, _, om = scrape(a.port, [PROM_ACCEPT])
    om = om.decode()
    fams = om_parse(om)
    check_om(om, fams, parse_metrics(text.decode()), vm.pid)
    series = check_exemplars(om, fams, vm.pid, ids, t_go, t_done)
    wait_for("Prometheus's samples after the end", lambda: (prom.value(
        f'timestamp(sqvm_info{{job="sqstat",pid="{vm.pid}"}})') or 0) > t_done + 0.5, 15)
    exemplar = check_prometheus(prom, vm.pid, ids, series, t_go)
    open(stop, "w").close()
    vm.wait(timeout=10)
    check_sqreq(procs, ids, rq)
    check_capture(procs, a, vm.pid, exemplar, sl)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vm", "sqstat", "sqreq", "sqslow", "prometheus", "promtool", "dir", "tmp"):
        ap.add_argument("--" + opt, required=True)
    a = ap.parse_args()
    drive("exemplars", a.tmp, lambda procs: run(procs, a))


if __name__ == "__main__":
    main()
