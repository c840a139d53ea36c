#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/doctor/figures.sh - measures each seeded fault of tests/doctor/ with the existing
# tools, as tests/doctor/README.md records them: starts the program, waits for its
# 'ready' line and 0.5 s more, attaches one tool for 2 s (-p PID -d 2), prints the figure
# (jq over the tool's JSON), and stops the program. Needs root and a built tree (make all).
#     tests/doctor/figures.sh [PROGRAM...]      (default: all of them)
set -u
cd "$(dirname "$0")/../.."
T=build/tools
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# measure PROGRAM JQ TOOL ARGS...: the figure JQ computes from TOOL's output (slurped
# JSON lines), or with JQ '-' the lines TOOL printed.
measure() {
    local prog=$1 jqf=$2 vm i
    shift 2
    : >"$OUT/vm"
    build/sqvm -cp tests/doctor "tests/doctor/$prog.som" 10 >"$OUT/vm" 2>&1 </dev/null &
    vm=$!
    for i in $(seq 100); do grep -q '^ready$' "$OUT/vm" && break; sleep 0.01; done
    sleep 0.5
    timeout 30 "$@" -p "$vm" -d 2 >"$OUT/tool" 2>/dev/null </dev/null
    kill "$vm" 2>/dev/null; wait "$vm" 2>/dev/null
    grep -v '^Tracing\|^Sampling\|^sqprof' "$OUT/tool" >"$OUT/rows"
    if [ "$jqf" = - ]; then sed "s|^|$prog: |" "$OUT/rows"
    else echo "$prog: ${*#build/tools/}: $(jq -rs "$jqf" "$OUT/rows" 2>&1 | tr '\n' ' ')"; fi
}

# The share of the 2 s in young pauses, and the counts.
GC='.[-1] | "young \(.young.count) pauses, \(.young.total_ns / 2e7 | floor)% of wall time; full \(.full.count), \(.full.total_ns / 2e7 | floor)%"'
ALLOC='.[-1] | .total.bytes as $t | .rows[0] | "\(.method) \(.class): \(.bytes * 100 / $t | floor)% of \($t / 2e3 | floor) KB/s"'
TENURED='[.[] | select(.kind == "young")] | "\(length) young: \((map(.tenured) | add) / 1e6 | floor) MB tenured, \((map(.freed) | add) / 1e6 | floor) MB freed"'
SEM='.[-1].processes[] | select(.name == "worker") | "worker waits on a Semaphore \(.semaphore_wait_ns / 2e7 | floor)% of the time (\(.semaphore_waits) waits)"'
RUNQ='.[-1].processes | sort_by(.name) | map("\(.name | ltrimstr("cruncher "))=\(.runq.total_ns / .runq.count / 1e6 * 10 | floor / 10)") | "mean run-queue ms: " + join(" ")'
NAPS='.[-1].processes[] | select(.name == "sleeper") | "sleeper: \(.delay_waits) Delays of \(.delay_wait_ns / .delay_waits / 1e6 * 10 | floor / 10) ms, then \(.runq.total_ns / .runq.count / 1e6 * 10 | floor / 10) ms ready, max \(.runq.max_ns / 1e6 * 10 | floor / 10)"'
SWITCHES='.[-1].processes | "process switches seen: \(map(.activations) | add // 0)"'
SYS='.[-1].rows[] | select(.method == "Logger>>log:" and .op == "write") | "Logger>>log: \(.calls / 2 | floor) writes/s"'
IOW='.[-1].rows[] | select(.method == "Fetcher>>fetch" and .op == "read") | "Fetcher>>fetch read: waits \(.wait_ns / 2e7 | floor)% of the time (\(.waits) waits, max \(.wait_max_ns / 1e6 | floor) ms)"'
CALLS='.[-1].rows | map("\(.name) \(.count / 2 | floor)/s") | join(", ")'
REQ='.[-1].routes | map("\(.route) n=\(.count) p50=\(.p50_ms * 10 | floor / 10) p99=\(.p99_ms * 10 | floor / 10) ms") | join(", ")'

run() {
    case $1 in
    GcPause)        measure GcPause "$GC" $T/sqgc -j ;;
    AllocHot)       measure AllocHot "$ALLOC" $T/sqalloc -b -s bytes -j
                    measure AllocHot "$GC" $T/sqgc -j ;;
    Tenure)         measure Tenure "$TENURED" $T/sqgc -e -j
                    measure Tenure "$GC" $T/sqgc -j ;;
    SemContention)  measure SemContention "$SEM" $T/sqsched -j ;;
    RunQueue)       measure RunQueue "$RUNQ" $T/sqsched -j ;;
    NoYield)        measure NoYield "$SWITCHES" $T/sqsched -j
                    measure NoYield - $T/sqprof --wall -f ;;
    DelayOvershoot) measure DelayOvershoot "$NAPS" $T/sqsched -j ;;
    SyscallHeavy)   measure SyscallHeavy "$SYS" $T/sqio -j
                    measure SyscallHeavy '.[-1].rows | map(select(.syscalls.count > 1) | "\(.name) \(.syscalls.count / 2 | floor) syscalls/s") | join(", ")' $T/sqcalls -S -j ;;
    IoWait)         measure IoWait "$IOW" $T/sqio -j ;;
    ExceptionStorm) measure ExceptionStorm "$CALLS" $T/sqcalls -M signal -j ;;
    DnuStorm)       measure DnuStorm "$CALLS" $T/sqcalls -M doesNotUnderstand -j ;;
    SlowRoute)      measure SlowRoute "$REQ" $T/sqreq -j ;;
    Clean)          measure Clean "$GC" $T/sqgc -j
                    measure Clean "$ALLOC" $T/sqalloc -b -s bytes -j
                    measure Clean "$REQ" $T/sqreq -j
                    measure Clean '.[-1].processes | map("\(.name): sem \(.semaphore_wait_ns / 2e7 | floor)% runq max \(.runq.max_ns / 1e3 | floor) us") | join(", ")' $T/sqsched -j ;;
    *) echo "figures.sh: no program $1" >&2; return 1 ;;
    esac
}

[ $# -gt 0 ] || set -- GcPause AllocHot Tenure SemContention RunQueue NoYield DelayOvershoot \
    SyscallHeavy IoWait ExceptionStorm DnuStorm SlowRoute Clean
for p in "$@"; do run "$p"; done
