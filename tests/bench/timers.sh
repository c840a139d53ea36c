#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/timers.sh - how exact the scheduler's Delays are and what its preemptions
# cost, for one or more VMs side by side (for example build/sqvm against a build of an
# older commit, to compare timer mechanisms).
#
#   tests/bench/timers.sh [VM...]        (make bench-timers; default build/sqvm)
#
# For each VM: tests/bench/timers/Preemption.som (the lateness of 200 Delays of 2 ms:
# idle, and preempting a computing process), then tests/bench/timers/Ticker.som without
# and with a 1 ms ticker beside the computation, TIMER_RUNS times each (default 5),
# alternating, in CPU time (perf stat's task-clock when perf works, else user + sys),
# keeping the least: the CPU each preemption costs is the difference over the ticks
# (on a shared VM that is within the noise; the context switches per preemption are
# counted exactly).
set -u
cd "$(dirname "$0")/../.."
runs=${TIMER_RUNS:-5}
(( $# )) || set -- build/sqvm
# run VM ARG -> "cpu-ms context-switches ticks": perf stat's task-clock and
# context-switches when perf works, else user + sys (10 ms ticks) and "?"
run() {
    local ms cs
    if perf stat -x, -e task-clock,context-switches -o "$tmp/perf" "$1" tests/bench/timers/Ticker.som "$2" >"$tmp/out" 2>&1; then
        ms=$(awk -F, '/task-clock/ { printf "%.1f", $1 }' "$tmp/perf")
        cs=$(awk -F, '/context-switches/ { print $1 }' "$tmp/perf")
    else
        local before after
        before=$(awk '{ print $16 + $17 }' /proc/$$/stat)
        "$1" tests/bench/timers/Ticker.som "$2" >"$tmp/out" 2>&1
        after=$(awk '{ print $16 + $17 }' /proc/$$/stat)
        ms=$(( (after - before) * 10 )) cs="?"
    fi
    echo "$ms $cs $(sed -n 's/^ticks: //p' "$tmp/out")"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for vm in "$@"; do
    echo "== $vm"
    "$vm" tests/bench/timers/Preemption.som
    best_none="" best_tick="" ticks=0 cs_none=0 cs_tick=0
    for ((i = 0; i < runs; i++)); do
        read -r ms cs _ < <(run "$vm" none)
        if [ -z "$best_none" ] || awk -v a="$ms" -v b="$best_none" 'BEGIN { exit !(a < b) }'; then best_none=$ms; cs_none=$cs; fi
        read -r ms cs t < <(run "$vm" tick)
        if [ -z "$best_tick" ] || awk -v a="$ms" -v b="$best_tick" 'BEGIN { exit !(a < b) }'; then best_tick=$ms; cs_tick=$cs; ticks=$t; fi
    done
    awk -v n="$best_none" -v t="$best_tick" -v k="$ticks" -v cn="$cs_none" -v ct="$cs_tick" 'BEGIN {
        printf "compute: %.1f ms CPU alone (%s context switches), %.1f ms beside a 1 ms ticker (%d ticks, %s context switches): %+.1f us CPU",
               n, cn, t, k, ct, (t - n) * 1000 / (k ? k : 1)
        if (ct != "?") printf ", %.1f context switches", (ct - cn) / (k ? k : 1)
        printf " per preemption\n" }'
done
