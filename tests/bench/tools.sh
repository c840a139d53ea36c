#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/tools.sh - what the tools cost: start-up to attached for each libbpf tool
# beside the equivalent bpftrace script, and the slowdown of an allocation-heavy benchmark
# (BinaryTrees) under sqalloc (exact and --sample), sqgc, sqflow and sqprof. Root only.
#
#   make bench-tools
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then echo "tests/bench/tools.sh: needs root (BPF)" >&2; exit 1; fi
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
trap 'pkill -INT -f "$TMPD/sqvm" 2>/dev/null; rm -rf "$TMPD"' EXIT
cp build/sqvm "$TMPD/sqvm" # a private copy: nobody else's probes on it, ours on nobody else's
VM=$TMPD/sqvm
BENCH=(BinaryTrees 16 1)

now_ms() { date +%s%3N; }

# stop PID: SIGINT, and SIGKILL if it has not exited 3 s later (bpftrace 0.17 can miss a
# SIGINT that arrives while it is still setting up)
stop() {
    kill -INT "$1" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# startup LABEL MARKER CMD...: milliseconds from launch until CMD prints MARKER
startup() {
    local label=$1 marker=$2 t0 t1 pid
    shift 2
    t0=$(now_ms)
    "$@" >"$TMPD/out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q "$marker" "$TMPD/out" && break; sleep 0.01; done
    t1=$(now_ms)
    stop "$pid"
    printf '%-34s %6d ms\n' "$label" $((t1 - t0))
}

echo "start-up to attached"
startup "sqalloc" "Tracing" build/tools/sqalloc --vm "$VM"
startup "sqgc" "Tracing" build/tools/sqgc --vm "$VM"
startup "sqflow" "Tracing" build/tools/sqflow --vm "$VM"
# BEGIN runs once every probe is attached: the same point as the tools' "Tracing" line.
startup "bpftrace objectalloc (equivalent)" "^Tracing" \
    bpftrace -e "BEGIN { printf(\"Tracing\\n\"); } usdt:$VM:squeak:object__alloc { @[str(arg0)] = count(); }"

run_bench() { "$VM" -cp tests/bench tests/bench/BenchmarkHarness.som "${BENCH[@]}" 2>/dev/null |
              sed -n 's/.*runtime: \([0-9]*\)us/\1/p'; }
best3() { local b="" us; for _ in 1 2 3; do us=$(run_bench); [ -z "$b" ] || (( us < b )) && b=$us; done; echo "$b"; }

echo
echo "${BENCH[0]} (CPU time, best of 3) under each tool, attached to every process of the binary"
base=$(best3)
printf '%-34s %9.1f ms\n' "nothing attached" "$(awk -v u="$base" 'BEGIN { print u / 1000 }')"
under() { # label marker cmd...
    local label=$1 marker=$2 pid t
    shift 2
    "$@" >"$TMPD/out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q "$marker" "$TMPD/out" && break; sleep 0.01; done
    t=$(best3)
    kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    printf '%-34s %9.1f ms  x%.2f\n' "$label" "$(awk -v u="$t" 'BEGIN { print u / 1000 }')" \
        "$(awk -v a="$t" -v b="$base" 'BEGIN { print a / b }')"
}
under "sqgc" "Tracing" build/tools/sqgc --vm "$VM"
under "sqalloc --sample" "Tracing" build/tools/sqalloc --sample --vm "$VM"
under "sqprof (99 Hz)" "Sampling" build/tools/sqprof --vm "$VM"
under "sqalloc (every allocation)" "Tracing" build/tools/sqalloc --vm "$VM"
# sqflow traps on every call and return: one iteration, with a selector filter that drops
# every event in BPF (printing 1.6 GB of flow is not the point here).
BENCH=(BinaryTrees 1 1)
base=$(best3)
printf '%-34s %9.1f ms\n' "nothing attached (1 iteration)" "$(awk -v u="$base" 'BEGIN { print u / 1000 }')"
under "sqflow -M none (every call)" "Tracing" build/tools/sqflow -M zzzNoSuchSelector --vm "$VM"
