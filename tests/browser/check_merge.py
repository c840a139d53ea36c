#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/browser/check_merge.py MERGED.json FETCHES UNTRACED - what sqflow --merge wrote
of a run of /static/trace.html?count=FETCHES beside UNTRACED requests of GET /hello with a
malformed or no traceparent. Prints one line per property: "ok NAME" or "bad NAME: why".

- FETCHES fetch slices, each with its own trace id, and FETCHES GET /work request slices
  with the same trace ids, each one's parent span the fetch's span;
- a flow per fetch: begun on the fetch's track within the fetch, stepping into its
  request (1 ns after it begins, within it), ending on the request's track;
- each request begins within its fetch (one clock: CLOCK_MONOTONIC), its answer's write
  (Socket>>write:timeout:) begins before the fetch ends, and Work>>handle: runs within it;
- the UNTRACED GET /hello requests have no trace id and no flow."""
import collections
import json
import sys


def main():
    path, want, untraced = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ev = json.load(open(path))["traceEvents"]
    res = []

    def check(name, ok, why=""):
        res.append(("ok " + name) if ok else ("bad %s: %s" % (name, why)))

    fetches = [e for e in ev if e.get("cat") == "fetch" and e.get("ph") == "X"]
    work = [e for e in ev if e.get("cat") == "request" and e.get("name") == "GET /work"]
    hello = [e for e in ev if e.get("cat") == "request" and e.get("name") == "GET /hello"]
    ftraces = {f["args"]["trace_id"] for f in fetches}
    check("fetches", len(fetches) == want and len(ftraces) == want,
          "%d fetch slices, %d trace ids" % (len(fetches), len(ftraces)))
    traced = [r for r in work if "trace_id" in r["args"]]
    check("requests", len(traced) == want and {r["args"]["trace_id"] for r in traced} == ftraces,
          "%d traced GET /work, %d of the fetches' trace ids" %
          (len(traced), len({r["args"]["trace_id"] for r in traced} & ftraces)))
    by_span = {f["args"]["span_id"]: f for f in fetches}
    pairs = []
    for r in traced:
        f = by_span.get(r["args"]["parent_span_id"])
        if f and f["args"]["trace_id"] == r["args"]["trace_id"]:
            pairs.append((f, r))
    check("parent spans", len(pairs) == want, "%d requests whose parent span is a fetch's" % len(pairs))

    flows = collections.defaultdict(dict)
    for e in ev:
        if e.get("cat") == "sqflow.merge" and e.get("ph") in ("s", "t", "f"):
            flows[e["id"]][e["ph"]] = e
    linked = 0
    for f, r in pairs:
        for fl in flows.values():
            s, t, fi = fl.get("s"), fl.get("t"), fl.get("f")
            if not (s and t and fi):
                continue
            if (s["pid"], s["tid"]) != (f["pid"], f["tid"]) or not f["ts"] <= s["ts"] <= f["ts"] + f["dur"]:
                continue
            if (t["pid"], t["tid"]) == (r["pid"], r["tid"]) == (fi["pid"], fi["tid"]) and \
                    r["ts"] < t["ts"] < r["ts"] + r["dur"]:
                linked += 1
                break
    check("flows", len(flows) == want and linked == want,
          "%d flows, %d linking a fetch to its request" % (len(flows), linked))

    slices = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("method", "block"):
            slices[(e["pid"], e["tid"])].append(e)
    began = wrote = ran = 0
    for f, r in pairs:
        fe, rb, re_ = f["ts"] + f["dur"], r["ts"], r["ts"] + r["dur"]
        began += f["ts"] <= rb <= fe
        inside = [e for e in slices[(r["pid"], r["tid"])] if rb <= e["ts"] and e["ts"] + e["dur"] <= re_]
        writes = [e for e in inside if e["name"] == "Socket(IOHandle)>>write:timeout:"]
        wrote += bool(writes) and max(e["ts"] for e in writes) <= fe
        ran += any(e["name"] == "Work>>handle:" for e in inside)
    check("one clock", began == want, "%d of %d requests began within their fetch" % (began, want))
    check("answer within fetch", wrote == want, "%d of %d answers written before the fetch ended" % (wrote, want))
    check("methods within request", ran == want, "%d of %d requests ran Work>>handle: within them" % (ran, want))

    bad = [r for r in hello if "trace_id" in r["args"]]
    check("untraced", len(hello) == untraced and not bad,
          "%d GET /hello, %d of them with a trace id" % (len(hello), len(bad)))
    print("\n".join(res))


if __name__ == "__main__":
    main()
