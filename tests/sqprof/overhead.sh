#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/sqprof/overhead.sh - what sqprof costs the VM it samples (as root).
#
#   tests/sqprof/overhead.sh [VM [RUNS]]      (default build/sqvm, 5 runs)
#
# Runs benchmarks of tests/bench through ProfBench (which waits for a go file, so that
# sqprof is attached before the timed part starts) alone, under sqprof -F 99 and under
# sqprof -F 999, interleaved in rotating order, RUNS times each; prints the best CPU time
# of each (the harness measures the VM's CPU time, so other load on the machine skews it
# less) and the overhead in percent. Then the cost of one sample: the BPF program's own
# run time (kernel.bpf_stats_enabled, switched on for that run only).
set -u
cd "$(dirname "$0")/../.." || exit 1

VM=${1:-build/sqvm}
RUNS=${2:-5}
TOOL=build/tools/sqprof
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# name outer inner: about 1.5 s each
BENCHES=("Richards 100 1" "DeltaBlue 800 1" "Storage 500 1" "Json 250 10")

# One run: prints the benchmark's CPU time in microseconds. hz 0: without sqprof.
run_one() { # hz name outer inner
    local hz=$1 go="$TMP/go" vm tool=""
    shift
    rm -f "$go"
    "$VM" -cp tests/bench tests/sqprof/ProfBench.som "$go" "$@" >"$TMP/vm.out" 2>&1 &
    vm=$!
    if [ "$hz" != 0 ]; then
        while ! grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null; do sleep 0.01; done
        "$TOOL" -p "$vm" -F "$hz" -f >/dev/null 2>"$TMP/tool.err" &
        tool=$!
        while ! grep -q '^Sampling' "$TMP/tool.err"; do sleep 0.01; done
    fi
    touch "$go"
    wait "$vm"
    [ -n "$tool" ] && wait "$tool"
    sed -nE 's/.*runtime: ([0-9]+)us/\1/p' "$TMP/vm.out"
}

make -s sqprof || exit 1
printf '%-10s %10s %10s %10s %8s %8s\n' BENCHMARK "ALONE ms" "99 Hz ms" "999 Hz ms" "99 Hz" "999 Hz"
for entry in "${BENCHES[@]}"; do
    read -r name outer inner <<<"$entry"
    best0=; best99=; best999=
    for ((r = 0; r < RUNS; r++)); do
        # the order rotates, so that a drift of the machine favours no mode
        case $((r % 3)) in 0) order="0 99 999" ;; 1) order="99 999 0" ;; 2) order="999 0 99" ;; esac
        for hz in $order; do
            t=$(run_one "$hz" "$name" "$outer" "$inner")
            [ -z "$t" ] && { echo "$name: no result" >&2; exit 1; }
            case $hz in
                0) [ -z "$best0" ] || [ "$t" -lt "$best0" ] && best0=$t ;;
                99) [ -z "$best99" ] || [ "$t" -lt "$best99" ] && best99=$t ;;
                999) [ -z "$best999" ] || [ "$t" -lt "$best999" ] && best999=$t ;;
            esac
        done
    done
    awk -v n="$name" -v a="$best0" -v b="$best99" -v c="$best999" 'BEGIN {
        printf "%-10s %10.1f %10.1f %10.1f %+7.2f%% %+7.2f%%\n", n, a / 1000, b / 1000, c / 1000,
            100 * (b - a) / a, 100 * (c - a) / a }'
done

# The BPF program's own time per sample, at 999 Hz on Richards.
old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1
rm -f "$TMP/go"
"$VM" -cp tests/bench tests/sqprof/ProfBench.som "$TMP/go" Richards 100 1 >/dev/null 2>&1 &
vm=$!
while ! grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null; do sleep 0.01; done
"$TOOL" -p "$vm" -F 999 -f -d 1 >"$TMP/folded" 2>"$TMP/tool.err" &
tool=$!
while ! grep -q '^Sampling' "$TMP/tool.err"; do sleep 0.01; done
touch "$TMP/go"
while kill -0 "$tool" 2>/dev/null; do
    bpftool prog show name cpu_sample 2>/dev/null |
        sed -nE 's/.*run_time_ns ([0-9]+) run_cnt ([0-9]+).*/\1 \2/p' | head -1 >"$TMP/stats.new"
    [ -s "$TMP/stats.new" ] && mv "$TMP/stats.new" "$TMP/stats"
    sleep 0.05
done
wait "$tool"
wait "$vm"
sysctl -qw kernel.bpf_stats_enabled="$old"
read -r ns cnt <"$TMP/stats" || { ns=0; cnt=0; }
samples=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/folded")
awk -v ns="$ns" -v cnt="$cnt" -v s="$samples" 'BEGIN {
    if (cnt && s) printf "BPF program at 999 Hz: %d calls on every CPU, %d of them samples of the VM; %.2f us a call on average, at most %.2f us per VM sample\n", cnt, s, ns / cnt / 1000, ns / s / 1000 }'
