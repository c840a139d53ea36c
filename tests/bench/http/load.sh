#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/http/load.sh [--anchors] [VM]: make load. wrk (2 threads, 64 connections,
# LOAD_DURATION, 10s by default) against examples/http's server on sqvm: GET /hello, then
# the mix of mix.lua (/hello, PUT and GET /kv, /work?n=100, a static file). With --anchors
# the same service in Python asyncio (asyncio_server.py, CPython 3.11) and Node.js http
# (node_server.js) runs the same way, in the same run, one server at a time. Prints
# requests/s, the latency percentiles, the server's own CPU time per request (user +
# system, /proc/PID/stat) and its peak RSS; exits 1 if any request failed (a status of
# 400 or more, a socket error or a timeout: wrk's counts) or a server did not start.
# Run it alone on the machine (its figures are timings).
set -u
cd "$(dirname "$0")/../../.." || exit 2
ANCHORS=0
[ "${1:-}" = --anchors ] && { ANCHORS=1; shift; }
VM=${1:-build/sqvm}
DURATION=${LOAD_DURATION:-10s}
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
NODE=${NODE:-$(command -v node || command -v nodejs)}
command -v wrk >/dev/null || { echo "load.sh: wrk is missing (scripts/deps.sh installs it)" >&2; exit 2; }
TMP=$(mktemp -d)
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
cat tests/bench/http/report.lua >"$TMP/hello.lua"
cat tests/bench/http/mix.lua tests/bench/http/report.lua >"$TMP/mix.lua"
FAILED=0

# start NAME CMD...: the server in the background; PORT from its "listening on" line
start() {
    local name=$1 i
    shift
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
    SERVER_PID=$!
    for ((i = 0; i < 500; i++)); do
        PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$name.out")
        [ -n "$PORT" ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.02
    done
    echo "load.sh: $name did not start: $(cat "$TMP/$name.err")" >&2
    return 1
}

ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }

# run NAME SCENARIO SCRIPT PATH: one wrk run; a row of the table
run() {
    local name=$1 scenario=$2 script=$3 path=$4 before after line
    before=$(cpu_ticks)
    wrk -t2 -c64 -d"$DURATION" -s "$script" "http://127.0.0.1:$PORT$path" >"$TMP/wrk.out" 2>&1
    after=$(cpu_ticks)
    line=$(grep '^RESULT ' "$TMP/wrk.out")
    if [ -z "$line" ]; then
        echo "load.sh: wrk failed against $name: $(cat "$TMP/wrk.out")" >&2
        FAILED=1
        return
    fi
    # RESULT requests=N rps=N p50=N p90=N p99=N p999=N max=N non2xx=N connect=N read=N write=N timeout=N
    local requests rps p50 p90 p99 max non2xx connect rd wr to
    read -r requests rps p50 p90 p99 _ max non2xx connect rd wr to <<<"$(sed 's/[a-z0-9]*=//g' <<<"${line#RESULT }")"
    local errors=$((non2xx + connect + rd + wr + to))
    local hz cpu
    hz=$(getconf CLK_TCK)
    cpu=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$requests" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
    printf '%-8s %-6s %9s %8s %8s %8s %8s %9s %8s  %s\n' "$name" "$scenario" "$rps" \
        "$(ms "$p50")" "$(ms "$p90")" "$(ms "$p99")" "$(ms "$max")" "$cpu" \
        "$(awk '/VmHWM/ { print $2 }' "/proc/$SERVER_PID/status")" \
        "$([ "$errors" = 0 ] && echo "0 errors" || echo "ERRORS: non-2xx $non2xx, connect $connect, read $rd, write $wr, timeout $to")"
    [ "$errors" = 0 ] || FAILED=1
}

# seed: every key of mix.lua stored first, so that each GET of one finds it
seed() {
    local k
    for k in $(seq 0 63); do
        exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
        printf 'PUT /kv/k%d HTTP/1.1\r\nHost: load\r\nContent-Length: 4\r\nConnection: close\r\n\r\nseed' "$k" >&3
        cat <&3 >/dev/null
        exec 3>&-
    done
}

bench() {
    local name=$1
    shift
    start "$name" "$@" || { FAILED=1; return; }
    seed
    run "$name" hello "$TMP/hello.lua" /hello
    run "$name" mix "$TMP/mix.lua" /
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}

echo "wrk -t2 -c64 -d$DURATION on $(nproc) CPUs; latency in ms; cpu: the server's user+system us per request; rss: peak KiB"
printf '%-8s %-6s %9s %8s %8s %8s %8s %9s %8s  %s\n' server load req/s p50 p90 p99 max cpu/req rss result
bench sqvm "$VM" -cp examples/http examples/http/Server.som 0
if [ "$ANCHORS" = 1 ]; then
    bench asyncio "$PYTHON" tests/bench/http/asyncio_server.py 0
    if [ -n "$NODE" ]; then bench node "$NODE" tests/bench/http/node_server.js 0
    else echo "node       skipped: no node or nodejs"; fi
fi
exit "$FAILED"
