#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/attach.sh - the production start-up: for every tool, the wall time from exec
# to its "Tracing" (sqprof: "Sampling"; sqstack: its first frame) line with -p PID on a VM
# that is already busy (tests/attach/Busy.som: calls, green processes, collections), and
# the CPU time the tool had used by then (/proc/PID/schedstat: user and kernel, the
# verifier's included), which other load on the machine moves less than the wall time.
# RUNS (5) runs each: the medians, and the wall times' spread. Root only.
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

# attached MARKER CMD...: "WALL_MS CPU_MS" from launch until CMD prints MARKER
attached() {
    local marker=$1 t0 t1 pid cpu=0
    shift
    rm -f "$TMPD/out"
    t0=$(date +%s%N)
    "$@" >"$TMPD/out" 2>&1 &
    pid=$!
    STARTED+=("$pid")
    for _ in $(seq 3000); do grep -qs "$marker" "$TMPD/out" && break; sleep 0.002; done
    t1=$(date +%s%N)
    read -r cpu _ 2>/dev/null <"/proc/$pid/schedstat"
    stop "$pid"
    echo "$(((t1 - t0) / 1000000)) $((cpu / 1000000))"
}

marker_of() {
    case $1 in
    sqprof) echo '^Sampling' ;;
    sqstack) echo '^    at ' ;;
    *) echo '^Tracing' ;;
    esac
}

printf '%-10s %-28s %7s %7s %7s %7s   (ms, %d runs each: exec to attached, -p PID of a busy VM)\n' \
    tool dir median min max cpu "$runs"
for t in ${TOOLS:-sqalloc sqgc sqflow sqprof sqcalls sqstat sqsched sqreq sqio sqstack}; do
    for ((i = 0; i < runs; i++)); do
        for d in "${!DIRS[@]}"; do
            echo "$d $(attached "$(marker_of "$t")" "${DIRS[$d]}/$t" -p "$BUSY")"
        done
    done | sort -k1,1n -k2,2n | awk -v t="$t" -v dirs="${DIRS[*]}" '
        { v[$1, ++n[$1]] = $2; c[$1, n[$1]] = $3 }
        END {
            split(dirs, name, " ")
            for (d = 0; (d, 1) in v; d++) {
                k = n[d]
                for (i = 1; i <= k; i++) { # insertion sort: mawk has no asort
                    x = c[d, i]
                    for (j = i - 1; j >= 1 && cs[j] > x; j--) cs[j + 1] = cs[j]
                    cs[j + 1] = x
                }
                printf "%-10s %-28s %7d %7d %7d %7d   (", t, name[d + 1], v[d, int((k + 1) / 2)], v[d, 1], v[d, k], cs[int((k + 1) / 2)]
                for (i = 1; i <= k; i++) printf "%s%d", (i > 1 ? " " : ""), v[d, i]
                printf ")\n"
            }
        }'
done
touch "$TMPD/stop"
wait "$BUSY" 2>/dev/null
