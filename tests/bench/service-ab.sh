#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-ab.sh - two VM binaries side by side under one tool: two
# examples/http servers share the last CPU, A on VM_A and B on VM_B, each under its own
# spinload on the other CPUs; each round runs them with nothing attached, then with TOOL
# attached to both (one instance each). A's CPU time per request (/proc/PID/schedstat)
# against B's in the same seconds, with TOOL, less the same with nothing attached (the
# pair's own bias), is what the change between the binaries costs the tool's targets;
# BPF is the run time of each instance's own programs (its descriptors' prog_ids) per
# request. Run it twice with the binaries swapped: a server's place has a bias of its own.
# tests/bench/README.md ("The held request begin, measured") used it.
#
#   VM_A=BIN VM_B=BIN tests/bench/service-ab.sh [ROUNDS [SECONDS [CONNECTIONS [LOAD [TOOL]]]]]
#   (defaults 6 rounds of 3 s, 32 connections per server, LOAD hello or mix, TOOL sqreq)
# Root only; needs two CPUs. Run it under flock /tmp/sqvm-heavy.lock.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/service-lib.sh
ROUNDS=${1:-6}
SECS=${2:-3}
CONNS=${3:-32}
LOAD=${4:-hello}
TOOL=${5:-sqreq}
[ -x "${VM_A:-}" ] && [ -x "${VM_B:-}" ] || { echo "tests/bench/service-ab.sh: VM_A and VM_B name two VM binaries" >&2; exit 1; }
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] || { echo "tests/bench/service-ab.sh: needs two CPUs (the servers share one)" >&2; exit 1; }
service_setup tests/bench/service-ab.sh
SCPU=$((NCPU - 1))
ON_CLIENT=(taskset -c 0-$((NCPU - 2)))

# private copies: start_server runs $TMPD/sqvm, so B's is started from a directory of its own
cp "$VM_A" "$TMPD/sqvm"
start_server A PORT_A "$TMPD/a.out" "$SCPU" || exit 1
TOP=$TMPD
TMPD=$TOP/b
mkdir "$TMPD" && cp "$VM_B" "$TMPD/sqvm"
start_server B PORT_B "$TMPD/b.out" "$SCPU" || exit 1
TMPD=$TOP
load_script "$PORT_A" "$LOAD" >/dev/null && load_script "$PORT_B" "$LOAD" >/dev/null || exit 1
spin_setup "$LOAD" || exit 1

load() { "${ON_CLIENT[@]}" "$TMPD/spinload" -c "$CONNS" -d "$1" "$2" "${SPIN_REQS[@]}" >"$3" 2>&1; }
requests() {
    grep -q '^RESULT ' "$1" || { echo "spinload failed: $(cat "$1")" >&2; return 1; }
    sed -n 's/^RESULT .*requests=\([0-9]*\).*/\1/p' "$1"
}
prog_ids() { for f in /proc/"$1"/fdinfo/*; do awk '/^prog_id:/ { print $2 }' "$f" 2>/dev/null; done | sort -un; }
# ids_ns IDS T0 T1: the run time between prog_times files T0 and T1 of the programs in IDS
ids_ns() {
    awk 'FILENAME == ARGV[1] { want[$1] = 1; next } FILENAME == ARGV[2] { t0[$1] = $2; next }
         ($1 in want) { n += $2 - t0[$1] } END { print n + 0 }' "$1" "$2" "$3"
}

load 1 "$PORT_A" "$TMPD/wa" & w=$!; load 1 "$PORT_B" "$TMPD/wb"; wait "$w" # warm up

# run MODE (none or tool): prints "A_VS_B% A_US/REQ B_US/REQ A_BPF_US/REQ B_BPF_US/REQ"
run() {
    local ta="" tb="" a0 b0 a1 b1 ra rb w
    : >"$TMPD/ids.a"; : >"$TMPD/ids.b"
    if [ "$1" = tool ]; then
        attach_tool "$TOOL" "$A"; ta=$TOOL_PID; prog_ids "$ta" >"$TMPD/ids.a"
        attach_tool "$TOOL" "$B"; tb=$TOOL_PID; prog_ids "$tb" >"$TMPD/ids.b"
    fi
    prog_times >"$TMPD/p.0"
    a0=$(cpu_ns "$A"); b0=$(cpu_ns "$B")
    load "$SECS" "$PORT_A" "$TMPD/wa" & w=$!
    load "$SECS" "$PORT_B" "$TMPD/wb"
    wait "$w"
    a1=$(cpu_ns "$A"); b1=$(cpu_ns "$B")
    prog_times >"$TMPD/p.1"
    if [ -n "$ta" ]; then kill -INT "$ta" "$tb"; wait "$ta" "$tb" 2>/dev/null; fi
    ra=$(requests "$TMPD/wa") && rb=$(requests "$TMPD/wb") || exit 1
    awk -v ca=$((a1 - a0)) -v cb=$((b1 - b0)) -v ra="$ra" -v rb="$rb" \
        -v ba="$(ids_ns "$TMPD/ids.a" "$TMPD/p.0" "$TMPD/p.1")" -v bb="$(ids_ns "$TMPD/ids.b" "$TMPD/p.0" "$TMPD/p.1")" 'BEGIN {
        printf "%.2f %.2f %.2f %.3f %.3f\n", (ca / ra) / (cb / rb) * 100 - 100, ca / ra / 1000, cb / rb / 1000,
            ba / ra / 1000, bb / rb / 1000 }'
}

for ((round = 0; round < ROUNDS; round++)); do
    for m in none tool; do r=$(run "$m") || exit 1; echo "$m $r" >>"$TMPD/results"; done
done

printf 'examples/http %s, A: %s, B: %s, two servers on CPU %s, each under spinload -c%s, %s rounds of %s s\n' \
    "$LOAD" "$VM_A" "$VM_B" "$SCPU" "$CONNS" "$ROUNDS" "$SECS"
printf '(A against B in the same seconds: medians, and the range of the runs)\n'
printf '%-10s %9s %14s %10s %10s %10s %10s\n' ATTACHED A_VS_B RANGE A_us/REQ B_us/REQ A_BPF_us B_BPF_us
for m in none tool; do
    col() { awk -v m="$m" -v c="$1" '$1 == m { print $c }' "$TMPD/results"; }
    printf '%-10s %+8.2f%% %14s %10.2f %10.2f %10.3f %10.3f\n' "$([ "$m" = none ] && echo nothing || echo "$TOOL")" \
        "$(col 2 | median)" "$(col 2 | spread)" "$(col 3 | median)" "$(col 4 | median)" "$(col 5 | median)" "$(col 6 | median)"
done
