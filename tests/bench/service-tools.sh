#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-tools.sh - what each request and scheduling tool costs a service:
# examples/http under wrk with nothing attached, and with sqreq, sqprof at 99 Hz (CPU and
# --wall), sqsched and sqio attached, in rounds that alternate the order, one server for
# all of them. Reported per tool: requests/s and the server's own CPU time per request
# (user + system, /proc/PID/stat), each against the runs with nothing attached in the
# same rounds (medians). Root only; needs wrk.
#
#   tests/bench/service-tools.sh [ROUNDS [SECONDS [CONNECTIONS [PATH]]]]
#   (defaults 5 rounds of 5 s, 16 connections, /hello)
set -u
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
SECS=${2:-5}
CONNS=${3:-16}
URLPATH=${4:-/hello}
if [ "$(id -u)" != 0 ]; then echo "tests/bench/service-tools.sh: needs root (BPF)" >&2; exit 1; fi
if [ ! -f examples/http/Server.som ]; then echo "tests/bench/service-tools.sh: examples/http is not in this tree" >&2; exit 1; fi
command -v wrk >/dev/null || { echo "tests/bench/service-tools.sh: needs wrk (scripts/deps.sh)" >&2; exit 1; }
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMPD"' EXIT
cp build/sqvm "$TMPD/sqvm" # a private copy: nobody else's probes on it, ours on nobody else's

"$TMPD/sqvm" -cp examples/http examples/http/Server.som 0 >"$TMPD/server.out" 2>&1 </dev/null &
SERVER=$!
for _ in $(seq 500); do grep -q '^listening on ' "$TMPD/server.out" && break; sleep 0.01; done
PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$TMPD/server.out")
[ -n "$PORT" ] || { echo "the server did not start: $(head -3 "$TMPD/server.out")" >&2; exit 1; }
URL="http://127.0.0.1:$PORT$URLPATH"
wrk -t1 -c"$CONNS" -d1s "$URL" >/dev/null 2>&1 # warm up

TOOLS=(none "sqreq" "sqprof -F 99" "sqprof -F 99 --wall" "sqsched" "sqio")

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }

# run TOOL: one wrk run with TOOL attached (none: nothing); prints "REQ_PER_S CPU_US_PER_REQ"
run() {
    local tool=$1 pid="" c0 c1 out reqs
    if [ "$tool" != none ]; then
        # shellcheck disable=SC2086
        build/tools/$tool -p "$SERVER" >"$TMPD/tool.out" 2>&1 &
        pid=$!
        for _ in $(seq 500); do grep -qE '^(Tracing|Sampling) ' "$TMPD/tool.out" && break; sleep 0.01; done
    fi
    c0=$(cpu_ticks)
    out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" "$URL" 2>&1)
    c1=$(cpu_ticks)
    if [ -n "$pid" ]; then kill -INT "$pid"; wait "$pid" 2>/dev/null; fi
    reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
    awk -v r="$reqs" -v s="$SECS" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.1f %.2f\n", r / s, r ? c * 1e6 / hz / r : 0 }'
}

for ((round = 0; round < ROUNDS; round++)); do
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do
        i=$(((k + round) % ${#TOOLS[@]}))
        echo "$i $(run "${TOOLS[$i]}")" >>"$TMPD/results"
    done
done

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
base_rps=$(awk '$1 == 0 { print $2 }' "$TMPD/results" | median)
base_cpu=$(awk '$1 == 0 { print $3 }' "$TMPD/results" | median)
printf 'examples/http %s, wrk -t1 -c%s, %s rounds of %s s (medians)\n' "$URLPATH" "$CONNS" "$ROUNDS" "$SECS"
printf '%-22s %10s %8s %12s %8s\n' TOOL REQ/S VS_NONE CPU_us/REQ VS_NONE
for ((i = 0; i < ${#TOOLS[@]}; i++)); do
    rps=$(awk -v i=$i '$1 == i { print $2 }' "$TMPD/results" | median)
    cpu=$(awk -v i=$i '$1 == i { print $3 }' "$TMPD/results" | median)
    awk -v t="${TOOLS[$i]}" -v r="$rps" -v br="$base_rps" -v c="$cpu" -v bc="$base_cpu" 'BEGIN {
        printf "%-22s %10.1f %+7.2f%% %12.2f %+7.2f%%\n", t, r, (r / br - 1) * 100, c, (c / bc - 1) * 100 }'
done
