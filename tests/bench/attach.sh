#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/attach.sh - the production start-up: for every tool, the wall time from exec
# to its "Tracing" (sqprof: "Sampling"; sqstack: its first frame) line with -p PID on a VM
# that is already busy (tests/attach/Busy.som: calls, green processes, collections), with
# tests/bench/tools.sh's startup helper. RUNS (5) runs each: the median and the spread.
# Root only.
#
#   tests/bench/attach.sh [DIR...]    the tools in each DIR (default build/tools), side by
#                                     side (before and after a change), runs alternating
#   TOOLS="sqreq sqio" tests/bench/attach.sh     only these tools
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then echo "tests/bench/attach.sh: needs root (BPF)" >&2; exit 1; fi
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
STARTED=()
trap 'for p in "${STARTED[@]+"${STARTED[@]}"}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$TMPD"' EXIT
. tests/bench/tools-lib.sh
runs=${RUNS:-5}
DIRS=("${@:-build/tools}")

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

printf '%-10s %-28s %7s %7s %7s   (ms, %d runs each: exec to attached, -p PID of a busy VM)\n' \
    tool dir median min max "$runs"
for t in ${TOOLS:-sqalloc sqgc sqflow sqprof sqcalls sqstat sqsched sqreq sqio sqstack}; do
    for ((i = 0; i < runs; i++)); do
        for d in "${!DIRS[@]}"; do
            echo "$d $(startup "$t" "$(marker_of "$t")" "${DIRS[$d]}/$t" -p "$BUSY" | awk '{ print $(NF - 1) }')"
        done
    done | sort -k1,1n -k2,2n | awk -v t="$t" -v dirs="${DIRS[*]}" '
        { v[$1, ++n[$1]] = $2 }
        END {
            split(dirs, name, " ")
            for (d = 0; (d, 1) in v; d++) {
                k = n[d]
                printf "%-10s %-28s %7d %7d %7d   (", t, name[d + 1], v[d, int((k + 1) / 2)], v[d, 1], v[d, k]
                for (i = 1; i <= k; i++) printf "%s%d", (i > 1 ? " " : ""), v[d, i]
                printf ")\n"
            }
        }'
done
touch "$TMPD/stop"
wait "$BUSY" 2>/dev/null
