#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/slow/check_capture.py FILE ID W_MS: checks an sqslow capture (tests/slow.sh):
# it parses as JSON in the Trace Event Format (an object with traceEvents), every
# event has its fields, complete slices only ("X", dur >= 0: no B/E to unbalance),
# no two slices of a track overlap unless one holds the other, every flow start has
# its end, and exactly one request slice is the captured request ID (ID 0: none, a
# window). Once the window has dropped messages for their age (and never for bytes),
# it begins at least W_MS before the request's end. Prints "ok" and what it holds, or
# what is wrong (exit 1).
import json
import sys
from collections import defaultdict

path, want_id, w_ms = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


def bad(why):
    print(f"{path}: {why}")
    sys.exit(1)


try:
    with open(path) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    bad(f"not JSON: {e}")
events = doc.get("traceEvents")
if not isinstance(events, list) or not events:
    bad("no traceEvents")
tracks = defaultdict(list)
flows = defaultdict(lambda: [0, 0])
captured = []
kinds = defaultdict(int)
for e in events:
    ph = e.get("ph")
    if ph not in ("X", "i", "s", "f", "M") or "name" not in e or "pid" not in e:
        bad(f"an event that is not ours: {e}")
    kinds[e.get("cat", "meta")] += 1
    if ph == "M":
        continue
    if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0 or "tid" not in e:
        bad(f"no time or track: {e}")
    if ph == "X":
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            bad(f"a slice without a duration: {e}")
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        if e.get("cat") == "request" and e.get("args", {}).get("captured"):
            captured.append(e)
    elif ph in ("s", "f"):
        flows[e.get("id")][ph == "f"] += 1
for key, slices in tracks.items():
    slices.sort(key=lambda s: (s[0], -s[1]))
    open_ends = []
    for b, end in slices:
        while open_ends and b >= open_ends[-1] - 0.001:
            open_ends.pop()
        if open_ends and end > open_ends[-1] + 0.001:
            bad(f"track {key}: a slice [{b}, {end}] overlaps one that ends at {open_ends[-1]}")
        open_ends.append(end)
for fid, (s, f) in flows.items():
    if s != 1 or f != 1:
        bad(f"flow {fid}: {s} starts, {f} ends")
other = doc.get("otherData", {})
if want_id:
    if len(captured) != 1 or captured[0]["args"].get("request_id") != want_id:
        bad(f"the captured request slices: {captured} (want one, id {want_id})")
    if other.get("request_id") != str(want_id):
        bad(f"otherData.request_id {other.get('request_id')}")
    req_end_ms = (captured[0]["ts"] + captured[0]["dur"]) / 1000
    first_ms = min(e["ts"] for e in events if e["ph"] != "M") / 1000
    if int(other.get("window_dropped", "0")) and not int(other.get("window_cut_for_bytes", "0")) and \
            req_end_ms - first_ms < w_ms:
        bad(f"the window begins {req_end_ms - first_ms:.3f} ms before the request's end (W {w_ms} ms)")
elif captured:
    bad("a window capture with a captured request")
print("ok " + " ".join(f"{k}={v}" for k, v in sorted(kinds.items())) + f" flows={len(flows)}")
