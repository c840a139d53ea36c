#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/attach.sh - the production start-up: for every tool, the wall time from exec
# to its "Tracing" (sqprof: "Sampling"; sqstack: its first frame) line with -p PID on a VM
# that is already busy (tests/attach/Busy.som: calls, green processes, collections), with
# tests/bench/tools.sh's startup helper. RUNS (5) runs each: the median and the spread.
# Root only.
#
#   tests/bench/attach.sh [TOOL...]    default: every tool
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then echo "tests/bench/attach.sh: needs root (BPF)" >&2; exit 1; fi
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
STARTED=()
trap 'for p in "${STARTED[@]+"${STARTED[@]}"}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$TMPD"' EXIT
. tests/bench/tools-lib.sh
runs=${RUNS:-5}

# a private copy: nobody else's probes on it
cp build/sqvm "$TMPD/sqvm"
"$TMPD/sqvm" -cp tests/attach tests/attach/Busy.som "$TMPD/stop" >"$TMPD/busy.out" 2>&1 </dev/null &
BUSY=$!
STARTED+=("$BUSY")
sleep 1

marker_of() {
    case $1 in
    sqprof) echo '^Sampling' ;;
    sqstack) echo '^    at ' ;;
    *) echo '^Tracing' ;;
    esac
}

printf '%-10s %8s %8s %8s   (ms, %d runs: %s)\n' tool median min max "$runs" "exec to attached, -p PID of a busy VM"
for t in "${@:-sqalloc sqgc sqflow sqprof sqcalls sqstat sqsched sqreq sqio sqstack}"; do
    for t1 in $t; do
        ms=()
        for ((i = 0; i < runs; i++)); do
            ms+=("$(startup "$t1" "$(marker_of "$t1")" "build/tools/$t1" -p "$BUSY" | awk '{ print $(NF - 1) }')")
        done
        printf '%s\n' "${ms[@]}" | sort -n | awk -v t="$t1" '{ v[NR] = $1 } END {
            printf "%-10s %8d %8d %8d   (", t, v[int((NR + 1) / 2)], v[1], v[NR]
            for (i = 1; i <= NR; i++) printf "%s%d", (i > 1 ? " " : ""), v[i]
            printf ")\n" }'
    done
done
touch "$TMPD/stop"
wait "$BUSY" 2>/dev/null
