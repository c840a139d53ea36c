#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""scripts/timeline.py - draws a few fetches of a trace written by sqflow --merge
(scripts/browser-trace.sh) as an SVG timeline, offline: the browser's fetches track and the
renderer's main thread, the network service's thread, the sqvm green process that served
them (the request slices and the Smalltalk methods under them), and the flows that link
each fetch to its request. docs/merged-timeline.svg is one.

    scripts/timeline.py MERGED.json OUT.svg [--first K] [--fetches N] [--depth D]

Takes fetches K .. K+N-1 (in time order; default the 5th and the two after it) and the
window from the first one's begin to the last one's end. Slices narrower than half a
pixel are left out; names are drawn where they fit."""
import argparse
import collections
import html
import json
import sys

WIDTH, LABEL_W, ROW_H, PAD = 1400, 290, 16, 6
COLOURS = {"fetch": "#4e79a7", "request": "#e15759", "method": "#59a14f", "block": "#9c755f",
           "sqflow.merge": "#f28e2b"}


def colour(cat):
    for key, c in COLOURS.items():
        if key in (cat or ""):
            return c
    return "#bab0ac"


def depths(slices):
    """Each slice's nesting depth on its track (slices sorted by begin, longer first)."""
    open_ends, out = [], []
    for s in sorted(slices, key=lambda e: (e["ts"], -e.get("dur", 0))):
        end = s["ts"] + s.get("dur", 0)
        while open_ends and open_ends[-1] <= s["ts"]:
            open_ends.pop()
        out.append((len(open_ends), s))
        open_ends.append(end)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("merged")
    ap.add_argument("out")
    ap.add_argument("--first", type=int, default=4)
    ap.add_argument("--fetches", type=int, default=3)
    ap.add_argument("--depth", type=int, default=16)
    a = ap.parse_args()
    ev = json.load(open(a.merged))["traceEvents"]
    fetches = sorted((e for e in ev if e.get("cat") == "fetch" and e.get("ph") == "X"), key=lambda e: e["ts"])
    chosen = fetches[a.first:a.first + a.fetches]
    if not chosen:
        sys.exit("timeline.py: %s has %d fetches: none from the %dth" % (a.merged, len(fetches), a.first + 1))
    t0, t1 = chosen[0]["ts"], max(f["ts"] + f["dur"] for f in chosen)
    t0 -= (t1 - t0) * 0.02
    t1 += (t1 - t0) * 0.02
    scale = (WIDTH - LABEL_W - PAD) / (t1 - t0)

    def x(ts):
        return LABEL_W + (ts - t0) * scale

    names = {}
    for e in ev:
        if e.get("ph") == "M" and e.get("name") in ("thread_name", "process_name"):
            names[(e["pid"], e.get("tid") if e["name"] == "thread_name" else None)] = e["args"]["name"]
    # the tracks drawn: the fetches' renderer, its main thread, the network service's busiest
    # thread in the window, and the server's green processes that ran a chosen request
    renderer = chosen[0]["pid"]
    spans = {f["args"]["span_id"] for f in chosen}
    reqs = [e for e in ev if e.get("cat") == "request" and e.get("ph") == "X" and
            e.get("args", {}).get("parent_span_id") in spans]
    tracks = [(renderer, chosen[0]["tid"]), (renderer, renderer)]
    inwin = [e for e in ev if e.get("ph") == "X" and "dur" in e and e["ts"] < t1 and e["ts"] + e["dur"] > t0]
    net = collections.Counter((e["pid"], e["tid"]) for e in inwin
                              if names.get((e["pid"], None), "").startswith("Service: network"))
    if net:
        tracks.append(net.most_common(1)[0][0])
    for r in reqs:
        if (r["pid"], r["tid"]) not in tracks:
            tracks.append((r["pid"], r["tid"]))
    # on the server's tracks, the requests and what ran within them (the loop frames around
    # them span the whole window and say nothing): depth 0 is the request
    within = collections.defaultdict(list)
    for r in reqs:
        within[(r["pid"], r["tid"])].append((r["ts"], r["ts"] + r["dur"]))
    by_track = collections.defaultdict(list)
    for e in inwin:
        t = (e["pid"], e["tid"])
        if t not in tracks or e["dur"] * scale < 0.5:
            continue
        if t in within and not any(b <= e["ts"] and e["ts"] + e["dur"] <= end for b, end in within[t]):
            continue
        by_track[t].append(e)

    body, y, row_of = [], 40, {}
    for t in tracks:
        placed = [(d, s) for d, s in depths(by_track[t]) if d < a.depth]
        rows = 1 + max((d for d, _ in placed), default=0)
        label = "%s: %s" % (names.get((t[0], None), "pid %d" % t[0]).replace("Service: ", ""),
                            names.get(t, "tid %d" % t[1]).split(", thread")[0])
        body.append('<text x="4" y="%d" class="t">%s</text>' % (y + 12, html.escape(label[:48])))
        body.append('<line x1="0" x2="%d" y1="%d" y2="%d" class="sep"/>' % (WIDTH, y - 3, y - 3))
        for d, s in placed:
            sx, w = max(x(s["ts"]), LABEL_W), min(x(s["ts"] + s["dur"]), WIDTH - PAD) - max(x(s["ts"]), LABEL_W)
            sy = y + d * ROW_H
            body.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>' %
                        (sx, sy, max(w, 0.5), ROW_H - 2, colour(s.get("cat")),
                         html.escape("%s (%.3f ms)" % (s["name"], s["dur"] / 1000))))
            if w > 7 * 6:
                body.append('<text x="%.1f" y="%d" class="s">%s</text>' %
                            (sx + 2, sy + 11, html.escape(s["name"][:int(w / 6.2)])))
        row_of[t] = (y, rows)
        y += rows * ROW_H + 14
    # flows: from the fetch's track to the request's (its s and f events by id)
    flows = collections.defaultdict(dict)
    for e in ev:
        if e.get("cat") == "sqflow.merge":
            flows[e["id"]][e["ph"]] = e
    for fl in flows.values():
        s, f = fl.get("s"), fl.get("f")
        if not (s and f) or not t0 <= s["ts"] <= t1 or (s["pid"], s["tid"]) not in row_of or \
                (f["pid"], f["tid"]) not in row_of:
            continue
        y0 = row_of[(s["pid"], s["tid"])][0] + ROW_H / 2
        y1 = row_of[(f["pid"], f["tid"])][0] + ROW_H / 2
        body.append('<path d="M%.1f %.1f L%.1f %.1f" class="flow" marker-end="url(#arrow)"/>' %
                    (x(s["ts"]), y0, x(f["ts"]), y1))
    # the time axis, in ms from the window's start
    step = 10 ** max(0, len(str(int((t1 - t0) / 1000 / 5))) - 1)
    axis = ['<text x="4" y="24" class="t">ms (CLOCK_MONOTONIC, from %.3f s)</text>' % (t0 / 1e6)]
    ms = 0
    while ms * 1000 <= t1 - t0:
        axis.append('<line x1="%.1f" x2="%.1f" y1="28" y2="%d" class="grid"/><text x="%.1f" y="24" class="a">%g</text>'
                    % (x(t0 + ms * 1000), x(t0 + ms * 1000), y, x(t0 + ms * 1000) + 2, ms))
        ms += step
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (WIDTH, y),
           '<style>.t{font-size:12px;fill:#222}.s{font-size:10px;fill:#fff}.a{font-size:10px;fill:#444}.grid{stroke:#ddd}'
           '.sep{stroke:#999}.flow{stroke:#f28e2b;stroke-width:1.5;fill:none}'
           'text.s{pointer-events:none}</style>',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto"><path d="M0 0L10 5L0 10z" fill="#f28e2b"/></marker></defs>',
           '<rect width="100%" height="100%" fill="#fff"/>'] + axis + body + ['</svg>']
    open(a.out, "w").write("\n".join(svg) + "\n")
    print("%s: %d fetches, %d requests, %.1f ms, %d tracks" % (a.out, len(chosen), len(reqs), (t1 - t0) / 1000,
                                                                len(tracks)))


if __name__ == "__main__":
    main()
