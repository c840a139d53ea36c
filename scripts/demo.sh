#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/demo.sh - the main job: installs what is missing, builds everything, runs the bundled
# workload (examples/Workload.som) once, then starts it again to run until stopped and
# attaches each tool to it while it is busy, as one would in production (sqvm is not
# restarted, and nothing in it was prepared for tracing): sqstat, sqalloc (by class, then
# which methods allocate the busiest class, and their callers), sqgc, sqcalls, sqsched,
# sqprof, sqstack and sqflow. Then the HTTP service of examples/http under wrk's load (the
# mix of tests/bench/http/mix.lua), with sqreq (requests per route), sqio (I/O by method)
# and sqsched attached to it. The tools need root (BPF); without it only the workload runs.
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
make -j"$(nproc)" all >/dev/null

echo "== build/sqvm --gc-stats examples/Workload.som"
build/sqvm --gc-stats examples/Workload.som

if [ "$(id -u)" != 0 ]; then
    echo "(the eBPF tools need root: run scripts/demo.sh as root to see them at work)"
    exit 0
fi
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true

build/sqvm examples/Workload.som forever >/dev/null &
VM=$!
SERVER=""
trap 'kill $VM $SERVER 2>/dev/null || true' EXIT
sleep 1
T=build/tools

show() { # title command...: one tool run against the busy VM
    echo
    echo "== $1"
    shift
    local shown="$*"
    echo "\$ ${shown//$VM/\$(pgrep -n sqvm)}"
    "$@" || echo "(exit status $?)"
}

show "sqstat: every VM on the host, its rates (two refreshes, 1 s apart)" \
    $T/sqstat --noclear 1 2
show "sqalloc: the objects it allocates, by class (1 s; exact, so the VM slows while traced)" \
    $T/sqalloc -p $VM -d 1 -n 8
busiest=$($T/sqalloc -p $VM -d 0.5 -n 1 | awk '/^CLASS/ { getline; print $1; exit }')
show "sqalloc -b -C ${busiest:=Point}: which methods allocate the busiest class" \
    $T/sqalloc -p $VM -d 1 -b -C "$busiest" -n 5
show "sqalloc --callers 2: ... and who called them" \
    $T/sqalloc -p $VM -d 1 -C "$busiest" --callers 2 -n 5
show "sqgc: young (incremental) and full collection pauses (3 s)" \
    $T/sqgc -p $VM -d 3
show "sqcalls: methods by inclusive time, with self time (1 s)" \
    $T/sqcalls -p $VM -d 1 -n 10
show "sqsched: the green processes (2 s)" \
    $T/sqsched -p $VM -d 2 -n 8
show "sqprof: where the CPU time goes, sampled at 99 Hz (3 s)" \
    $T/sqprof -p $VM -d 3 -n 10
show "sqstack: its Smalltalk stack right now" \
    $T/sqstack -p $VM
show "sqflow: the calls of Workload's own methods, with their durations (1 s)" \
    $T/sqflow -p $VM -d 1 -C Workload --no-blocks

# The service: a server, its keys stored, wrk on it, the tools attached while it serves
kill $VM
build/sqvm -cp examples/http examples/http/Server.som 0 >"${TMPDIR:-/tmp}/sqvm-demo-http.$$" &
SERVER=$!
VM=$SERVER
for _ in $(seq 250); do grep -q '^listening' "${TMPDIR:-/tmp}/sqvm-demo-http.$$" && break; sleep 0.02; done
PORT=$(sed -n 's/^listening on 127\.0\.0\.1://p' "${TMPDIR:-/tmp}/sqvm-demo-http.$$")
rm -f "${TMPDIR:-/tmp}/sqvm-demo-http.$$"
echo
echo "== examples/http on 127.0.0.1:$PORT under wrk -t2 -c64 -d12s -s tests/bench/http/mix.lua"
for k in $(seq 0 63); do
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'PUT /kv/k%d HTTP/1.1\r\nHost: demo\r\nContent-Length: 4\r\nConnection: close\r\n\r\nseed' "$k" >&3
    cat <&3 >/dev/null
    exec 3>&-
done
wrk -t2 -c64 -d12s -s tests/bench/http/mix.lua "http://127.0.0.1:$PORT/" >"${TMPDIR:-/tmp}/sqvm-demo-wrk.$$" &
WRK=$!
sleep 1
show "sqreq: the requests per route, their latency and where it went (3 s)" \
    $T/sqreq -p $VM -d 3
show "sqio: the service's I/O by Smalltalk method (2 s)" \
    $T/sqio -p $VM -d 2 -n 8
show "sqsched: one green process per connection (2 s)" \
    $T/sqsched -p $VM -d 2 -n 6
wait $WRK || true
echo
echo "== wrk's summary"
grep -E 'Requests/sec|Latency|requests in|Non-2xx|Socket errors' "${TMPDIR:-/tmp}/sqvm-demo-wrk.$$" || true
rm -f "${TMPDIR:-/tmp}/sqvm-demo-wrk.$$"
