#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/browser-trace.sh - one timeline across the browser and the VM, in one command:
# starts examples/http on a port of its own, attaches sqflow --merge to it, has headless
# Chromium (scripts/cdptrace.py, over the DevTools Protocol) load /static/trace.html,
# whose script makes COUNT fetches of /work?n=..., each with its own W3C traceparent, and
# writes the merged trace: the browser's slices and the server's (requests, methods,
# green processes), each fetch linked by a flow to the request it made. Open the result
# in ui.perfetto.dev or chrome://tracing; scripts/timeline.py draws a few fetches of it
# as an SVG (docs/merged-timeline.svg is one).
#
#   scripts/browser-trace.sh [-n COUNT] [OUT.json]      (as root; default 20, merged.json)
#
# Needs a build (make all), root (sqflow loads BPF programs), python3 and Debian's
# chromium (scripts/deps.sh installs them).
set -eu
cd "$(dirname "$0")/.."
COUNT=20
while getopts n:h opt; do
    case $opt in
        n) COUNT=$OPTARG ;;
        *) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
OUT=$(realpath -m "${1:-merged.json}")
case $COUNT in ''|*[!0-9]*) echo "browser-trace.sh: -n takes a number of fetches" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "browser-trace.sh: run as root (sqflow loads BPF programs)" >&2; exit 1; }
for f in build/sqvm build/tools/sqflow; do
    [ -x "$f" ] || { echo "browser-trace.sh: no $f: run make all first" >&2; exit 1; }
done
command -v chromium >/dev/null || { echo "browser-trace.sh: no chromium (scripts/deps.sh installs it)" >&2; exit 1; }

WORK=$(mktemp -d)
SERVER="" TOOL=""
trap 'kill $TOOL $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

# the server, on a port the system chooses; its "listening on" line names it
build/sqvm -cp examples/http examples/http/Server.som 0 >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
for _ in $(seq 100); do
    grep -q '^listening on ' "$WORK/server.out" && break
    kill -0 $SERVER 2>/dev/null || { cat "$WORK/server.err" >&2; exit 1; }
    sleep 0.05
done
PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/server.out")
[ -n "$PORT" ] || { echo "browser-trace.sh: examples/http did not start" >&2; exit 1; }
echo "examples/http (PID $SERVER) on 127.0.0.1:$PORT"

# sqflow, until the page is done; it reads the browser's trace when it ends
build/tools/sqflow -p $SERVER --merge "$WORK/chromium.json" >"$OUT" 2>"$WORK/sqflow.err" &
TOOL=$!
for _ in $(seq 200); do
    grep -q '^Tracing ' "$WORK/sqflow.err" && break
    kill -0 $TOOL 2>/dev/null || { cat "$WORK/sqflow.err" >&2; exit 1; }
    sleep 0.05
done
echo "sqflow --merge attached (PID $TOOL); Chromium loads /static/trace.html?count=$COUNT"
answered=$(python3 scripts/cdptrace.py --timeout 120 "http://127.0.0.1:$PORT/static/trace.html?count=$COUNT" \
    "$WORK/chromium.json")
echo "the page's fetches answered: $answered of $COUNT"
# the VM hands over a request's last records when it next goes idle: let them arrive
sleep 0.5
kill -INT $TOOL
status=0
wait $TOOL || status=$?
TOOL=""
grep -v '^Tracing ' "$WORK/sqflow.err" >&2 || true
[ $status = 0 ] || { echo "browser-trace.sh: sqflow failed (status $status)" >&2; exit 1; }
echo "wrote $OUT ($(stat -c %s "$OUT") bytes): open it in ui.perfetto.dev"
