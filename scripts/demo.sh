#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/demo.sh - the main job: installs what is missing, builds everything, runs the bundled
# workload (examples/Workload.som) once, then starts it again to run until stopped and
# attaches each tool to it while it is busy, as one would in production (sqvm is not
# restarted, and nothing in it was prepared for tracing): sqstat, sqalloc (by class, then
# which methods allocate the busiest class, and their callers), sqgc, sqcalls, sqsched,
# sqprof, sqstack and sqflow. The tools need root (BPF); without it only the workload runs.
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
trap 'kill $VM 2>/dev/null || true' EXIT
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
