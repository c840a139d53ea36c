#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/tools.sh - what the tools cost: start-up to attached for each libbpf tool
# beside the equivalent bpftrace script, and what each event costs the traced VM under
# sqalloc (exact and --sample), sqgc, sqcalls, sqflow and sqsched, as the VM's own CPU time. Root only.
#
#   make bench-tools                  (build/sqvm)
#   tests/bench/tools.sh VM [VM...]   the per-event costs of several VM binaries, side by
#                                     side (a binary before and after a change), each with
#                                     the tools built beside it (DIR/tools/ of DIR/sqvm, when
#                                     there is one; else build/tools/)
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then echo "tests/bench/tools.sh: needs root (BPF)" >&2; exit 1; fi
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
STARTED=() # every process this script starts, ended by PID at exit
trap 'for p in "${STARTED[@]+"${STARTED[@]}"}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$TMPD"' EXIT
# private copies: nobody else's probes on them, ours on nobody else's
VMS=()
TOOLDIRS=()
for v in "${@:-build/sqvm}"; do
    [ -x "$v" ] || { echo "tests/bench/tools.sh: $v is not an executable" >&2; exit 1; }
    if [ -x "$(dirname "$v")/tools/sqalloc" ]; then TOOLDIRS+=("$(dirname "$v")/tools"); else TOOLDIRS+=(build/tools); fi
    mkdir -p "$TMPD/${#VMS[@]}" && cp "$v" "$TMPD/${#VMS[@]}/sqvm" && VMS+=("$TMPD/${#VMS[@]}/sqvm")
done
VM=${VMS[0]}
NAMES=("${@:-build/sqvm}")

# now_ms, stop, startup (uses $TMPD and STARTED)
. tests/bench/tools-lib.sh

if [ -z "${BENCH_ONLY:-}" ]; then
    echo "start-up to attached"
    startup "sqalloc" "Tracing" build/tools/sqalloc --vm "$VM"
    startup "sqgc" "Tracing" build/tools/sqgc --vm "$VM"
    startup "sqflow" "Tracing" build/tools/sqflow --vm "$VM"
    # BEGIN runs once every probe is attached: the same point as the tools' "Tracing" line.
    startup "bpftrace objectalloc (equivalent)" "^Tracing" \
        bpftrace -e "BEGIN { printf(\"Tracing\\n\"); } usdt:$VM:squeak:object__alloc { @[str(arg0)] = count(); }"
fi

# ---- What a tool costs the VM it traces, per event ----
# BENCH_ONLY=requests measures the requests phase alone (sqstat's exporter, per request),
# BENCH_ONLY=calls the calls phase alone (sqcalls, and sqcalls -S: its per-event probes).
# BENCH_ONLY=switches the switches phase alone (sqsched, per switch).
# The traced process pays for its uprobes (the trap and the BPF program run in its
# context), so the cost is the VM's own CPU time, user + system from /proc/PID/stat,
# with the tool attached against none, over a phase with a known number of events
# (tests/bench/ToolCost.som): N allocations, or N calls (an entry and a return each).
# The wall time of the same phase is shown beside it. Median of BENCH_RUNS (3).
runs=${BENCH_RUNS:-3}
NALLOC=${BENCH_ALLOCS:-3000000}
NCALLS=${BENCH_CALLS:-1000000}
NSWITCHES=${BENCH_SWITCHES:-4000000}
NREQUESTS=${BENCH_REQUESTS:-200000}
TICK=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime (field 2 has no spaces)

# phase_cost K PHASE N TOOL...: one run of VM number K (build/tools/NAME is its tools'
# NAME); prints "cpu_seconds wall_seconds" of the phase
phase_cost() {
    local bin=${VMS[$1]} phase=$2 n=$3 go="$TMPD/go.$RANDOM" done="$TMPD/done.$RANDOM" vm tool="" c0 c1 t0 t1
    local tools=${TOOLDIRS[$1]}
    shift 3
    [ $# -gt 0 ] && set -- "${1/#build\/tools/$tools}" "${@:2}"
    "$bin" tests/bench/ToolCost.som "$phase" "$n" "$go" "$done" >"$TMPD/vm.out" 2>&1 &
    vm=$!
    STARTED+=("$vm")
    for _ in $(seq 500); do grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null && break; sleep 0.01; done
    if [ $# -gt 0 ]; then
        "$@" -p "$vm" >"$TMPD/tool.out" 2>&1 &
        tool=$!
        STARTED+=("$tool")
        for _ in $(seq 1000); do grep -q "Tracing" "$TMPD/tool.out" && break; sleep 0.01; done
    fi
    c0=$(cpu_ticks "$vm"); t0=$(date +%s%N)
    touch "$go"
    for _ in $(seq 30000); do grep -q '^done' "$TMPD/vm.out" && break; sleep 0.01; done
    c1=$(cpu_ticks "$vm"); t1=$(date +%s%N)
    [ -n "$tool" ] && stop "$tool"
    touch "$done"
    wait "$vm" 2>/dev/null
    awk -v a="$c0" -v b="$c1" -v t="$TICK" -v w0="$t0" -v w1="$t1" 'BEGIN { printf "%.3f %.3f\n", (b - a) / t, (w1 - w0) / 1e9 }'
}

# costs PHASE N TOOL...: for each VM in turn, $runs runs alternating between the VMs;
# prints one "cpu wall" line per VM, the median of its runs
costs() {
    local i k
    for ((i = 0; i < runs; i++)); do
        for k in "${!VMS[@]}"; do echo "$k $(phase_cost "$k" "$@")"; done
    done | sort -k1,1n -k2,2g | awk '{ c[$1, ++n[$1]] = $2; w[$1, n[$1]] = $3 }
        END { for (k = 0; (k, 1) in c; k++) { m = int((n[k] + 1) / 2); print c[k, m], w[k, m] } }'
}

# row LABEL PHASE N BASE TOOL...: the phase's CPU and wall time under TOOL, and what each
# event cost beyond BASE (the same phase with nothing attached: a "cpu wall" line per VM)
row() {
    local label=$1 phase=$2 n=$3 base=$4 r k=0
    shift 4
    r=$(costs "$phase" "$n" "$@")
    paste -d' ' <(echo "$r") <(echo "$base") | while read -r c w bc bw; do
        awk -v l="$label" -v v="${NAMES[$k]}" -v c="$c" -v w="$w" -v bc="$bc" -v bw="$bw" -v n="$n" -v many="${#VMS[@]}" 'BEGIN {
            if (many > 1) l = l " [" v "]"
            printf "%-48s %8.3f s %8.3f s   %6.3f us %6.3f us\n", l, c, w, (c - bc) / n * 1e6, (w - bw) / n * 1e6 }'
        k=$((k + 1))
    done
}

echo
echo "per event: the traced VM's CPU time (user + sys, /proc/PID/stat) and wall time over a"
echo "phase of $NALLOC allocations or $NCALLS calls, attached against none (median of $runs)"
printf '%-48s %10s %10s   %9s %9s\n' "" "VM CPU" "wall" "CPU/event" "wall/event"
# sqstat's exporter: every request is a request__begin and a request__end hit, each
# request bucketed in the kernel with its exemplar (bpf/sqstat.bpf.c's observe)
requests_rows() {
    local base_requests
    base_requests=$(costs requests "$NREQUESTS")
    row "nothing attached ($NREQUESTS requests)" requests "$NREQUESTS" "$base_requests"
    row "sqstat --listen (per request: begin + end)" requests "$NREQUESTS" "$base_requests" \
        build/tools/sqstat --listen 127.0.0.1:0
}
if [ "${BENCH_ONLY:-}" = requests ]; then
    requests_rows
    exit 0
fi
if [ "${BENCH_ONLY:-}" = calls ]; then
    base_calls=$(costs calls "$NCALLS")
    row "nothing attached ($NCALLS calls)" calls "$NCALLS" "$base_calls"
    row "sqcalls (per call: entry + return)" calls "$NCALLS" "$base_calls" build/tools/sqcalls
    row "sqcalls -S (per call: entry + return)" calls "$NCALLS" "$base_calls" build/tools/sqcalls -S
    exit 0
fi
if [ "${BENCH_ONLY:-}" = switches ]; then
    base_switches=$(costs switches "$NSWITCHES")
    row "nothing attached ($NSWITCHES switches)" switches "$NSWITCHES" "$base_switches"
    row "sqsched (per switch: wait, ready, activation)" switches "$NSWITCHES" "$base_switches" build/tools/sqsched
    exit 0
fi
base_alloc=$(costs alloc "$NALLOC")
base_calls=$(costs calls "$NCALLS")
row "nothing attached ($NALLOC allocations)" alloc "$NALLOC" "$base_alloc"
row "sqgc" alloc "$NALLOC" "$base_alloc" build/tools/sqgc
row "sqalloc --sample" alloc "$NALLOC" "$base_alloc" build/tools/sqalloc --sample
row "sqalloc (every allocation)" alloc "$NALLOC" "$base_alloc" build/tools/sqalloc
row "nothing attached ($NCALLS calls)" calls "$NCALLS" "$base_calls"
row "sqcalls (per call: entry + return)" calls "$NCALLS" "$base_calls" build/tools/sqcalls
# sqflow traps on every entry and return; -M with a selector nothing has drops every event
# in BPF, so that printing the flow is not what is measured
row "sqflow -M none (per call)" calls "$NCALLS" "$base_calls" build/tools/sqflow -M zzzNoSuchSelector
# sqsched: every switch of ToolCost's ping-pong is three sched__batch records (a
# Semaphore wait, the signal's ready, the activation), each a Semaphore wait's row
base_switches=$(costs switches "$NSWITCHES")
row "nothing attached ($NSWITCHES switches)" switches "$NSWITCHES" "$base_switches"
row "sqsched (per switch: wait, ready, activation)" switches "$NSWITCHES" "$base_switches" build/tools/sqsched
requests_rows
