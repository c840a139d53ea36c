#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/slow/check_pftrace.py DECODED JSON: an sqslow capture written both ways
# (--format=chrome,perfetto: one window, two writers) against itself (tests/slow.sh).
# DECODED is protoc's text of the .pftrace (protoc --decode=perfetto.protos.Trace
# tools/perfetto/trace_subset.proto), JSON the .json. They must hold exactly the same
# slices (each begin with its end, per track), instants and flows (each id begun once
# and ended once), the same event names as often, the same track names, and a request_id
# annotation per request slice. Prints the counts, or what differs (exit 1).
import codecs
import json
import re
import sys
from collections import Counter

dec_path, json_path = sys.argv[1], sys.argv[2]


def bad(why):
    print(f"{dec_path}: {why}")
    sys.exit(1)


def unquote(s):
    return codecs.escape_decode(s.encode("latin-1"))[0].decode("utf-8", "replace")


# protoc's text: one field or block per line
packets, stack, cur = [], [], None
for line in open(dec_path, encoding="latin-1"):
    line = line.strip()
    if line.endswith("{"):
        block = line[:-1].strip()
        stack.append(block)
        if stack == ["packet"]:
            cur = {"events": [], "names": [], "tracks": []}
            packets.append(cur)
        elif block == "track_event":
            cur["events"].append({"flow_ids": [], "terminating_flow_ids": [], "annotations": []})
        elif block == "event_names":
            cur["names"].append({})
        elif block == "track_descriptor":
            cur["tracks"].append({})
        elif block == "debug_annotations":
            cur["events"][-1]["annotations"].append({})
        continue
    if line == "}":
        stack.pop()
        continue
    m = re.match(r'(\w+): (?:"(.*)"|(\S+))$', line)
    if not m or not stack:
        bad(f"unexpected line {line!r}")
    key, val = m.group(1), unquote(m.group(2)) if m.group(2) is not None else m.group(3)
    where = stack[-1]
    if where == "track_event":
        ev = cur["events"][-1]
        if key in ("flow_ids", "terminating_flow_ids"):
            ev[key].append(int(val))
        else:
            ev[key] = val
    elif where == "event_names":
        cur["names"][-1][key] = val
    elif where == "track_descriptor":
        cur["tracks"][-1][key] = val
    elif where == "debug_annotations":
        cur["events"][-1]["annotations"][-1][key] = val

if not packets or "sequence_flags: 1" not in open(dec_path).read():
    bad("no packet clears the incremental state")
iids, names, open_at, flows_out, flows_end, tracks = {}, Counter(), Counter(), Counter(), Counter(), set()
slices = instants = request_ids = 0
for p in packets:
    for n in p["names"]:
        if n["iid"] in iids:
            bad(f"iid {n['iid']} interned twice")
        iids[n["iid"]] = n["name"]
    for t in p["tracks"]:
        if "parent_uuid" in t:
            tracks.add(t["name"])
    for ev in p["events"]:
        name = iids[ev["name_iid"]] if "name_iid" in ev else ev.get("name")
        t = ev["type"]
        if t == "TYPE_SLICE_BEGIN":
            slices += 1
            open_at[ev["track_uuid"]] += 1
        elif t == "TYPE_SLICE_END":
            open_at[ev["track_uuid"]] -= 1
            if open_at[ev["track_uuid"]] < 0:
                bad(f"an end without its begin on track {ev['track_uuid']}")
            continue
        elif t == "TYPE_INSTANT":
            instants += 1
        else:
            bad(f"event of type {t}")
        names[name] += 1
        flows_out.update(ev["flow_ids"])
        flows_end.update(ev["terminating_flow_ids"])
        request_ids += sum(a.get("name") == "request_id" for a in ev["annotations"])
if +open_at:
    bad(f"begins without their ends: {dict(+open_at)}")
if set(flows_out) != set(flows_end) or max(flows_out.values(), default=1) > 1 or max(flows_end.values(), default=1) > 1:
    bad(f"flows not begun and ended once each: {len(flows_out)} begun, {len(flows_end)} ended")

with open(json_path) as f:
    events = json.load(f)["traceEvents"]
j_names = Counter(e["name"] for e in events if e["ph"] in ("X", "i"))
j_slices = sum(e["ph"] == "X" for e in events)
j_instants = sum(e["ph"] == "i" for e in events)
j_flows = sum(e["ph"] == "s" for e in events)
j_requests = sum(e.get("cat") == "request" for e in events)
j_tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
got = (slices, instants, len(flows_out), request_ids)
want = (j_slices, j_instants, j_flows, j_requests)
if got != want:
    bad(f"slices, instants, flows, request_ids: {got}, the JSON's {want}")
if names != j_names:
    bad(f"event names differ: only here {dict(names - j_names)}, only in the JSON {dict(j_names - names)}")
if tracks != j_tracks:
    bad(f"track names differ: {sorted(tracks ^ j_tracks)}")
print(f"{slices} slices, {instants} instants, {len(flows_out)} flows, {len(names)} names, {len(tracks)} tracks")
