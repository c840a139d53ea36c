#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-profile.sh - where a tool's cost to a service goes, from the
# server's CPU samples: examples/http under wrk (GET /hello, -t2 -c64), the server alone
# on the last CPU, perf record -C on that CPU with nothing attached and with each tool.
# Per tool, the share of the server CPU's samples in
#   BPF     the tool's programs (bpf_prog_*: their own work)
#   PROBE   the kernel's uprobe path that runs them (uprobe*, handle_swbp, sys_uprobe)
#   RECORD  the VM writing event records (batch_*, probe_*, sched_record, sched_fill, record_*, the
#           frames and descriptor kinds of sqio's: stack_methods, io_frames, io_fd_kind*)
#   CLOCK   the records' time stamps (the vDSO clock, less what the VM reads with none)
# and their sum, DIRECT: the tool's cost counted sample by sample. It is steadier than
# requests/s on a shared machine (service-tools.sh: a pair of runs can differ by 15%),
# but it leaves out what a tool costs indirectly (caches it evicts, wrk's CPU it takes),
# and perf's own sampling slows the server (about 20%) evenly for all.
#
#   tests/bench/service-profile.sh [SECONDS [TOOL...]]   (default 5 s; tools as below)
# Root only; needs wrk and perf. Run it under flock /tmp/sqvm-heavy.lock.
set -u
cd "$(dirname "$0")/../.."
SECS=${1:-5}
shift 2>/dev/null
if [ $# -gt 0 ]; then TOOLS=("$@"); else TOOLS=("sqreq" "sqsched" "sqprof -F 99" "sqprof -F 99 --wall" "sqio"); fi
[ "$(id -u)" = 0 ] || { echo "tests/bench/service-profile.sh: needs root (BPF, perf)" >&2; exit 1; }
command -v wrk >/dev/null && command -v perf >/dev/null || { echo "tests/bench/service-profile.sh: needs wrk and perf" >&2; exit 1; }
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMPD"' EXIT
# sqio's page-cache tracepoint is found through tracefs (a fresh boot may not have it)
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
cp build/sqvm "$TMPD/sqvm"
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] || { echo "tests/bench/service-profile.sh: needs two CPUs (the server alone on one)" >&2; exit 1; }
SCPU=$((NCPU - 1))
ON_CLIENT=(taskset -c 0-$((NCPU - 2)))
taskset -c "$SCPU" "$TMPD/sqvm" -cp examples/http examples/http/Server.som 0 >"$TMPD/server.out" 2>&1 </dev/null &
SERVER=$!
for _ in $(seq 500); do grep -q '^listening on ' "$TMPD/server.out" && break; sleep 0.01; done
PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$TMPD/server.out")
[ -n "$PORT" ] || { echo "the server did not start" >&2; exit 1; }
URL="http://127.0.0.1:$PORT/hello"
"${ON_CLIENT[@]}" wrk -t2 -c64 -d1s -s tests/bench/http/report.lua "$URL" >/dev/null 2>&1

# profile TOOL: perf's samples on the server's CPU under load, one "PERCENT SYMBOL" a line
profile() {
    local tool=$1 pid=""
    if [ "$tool" != none ]; then
        # shellcheck disable=SC2086
        "${ON_CLIENT[@]}" build/tools/$tool -p "$SERVER" >"$TMPD/tool.out" 2>&1 &
        pid=$!
        for _ in $(seq 500); do grep -qE '^(Tracing|Sampling) ' "$TMPD/tool.out" && break; sleep 0.01; done
    fi
    "${ON_CLIENT[@]}" wrk -t2 -c64 -d$((SECS + 2))s -s tests/bench/http/report.lua "$URL" >"$TMPD/wrk.out" 2>&1 &
    local w=$!
    sleep 1
    perf record -q -C "$SCPU" -o "$TMPD/perf.data" -- sleep "$SECS" >/dev/null 2>&1
    wait "$w"
    [ -n "$pid" ] && { kill -INT "$pid"; wait "$pid" 2>/dev/null; }
    grep -q '^RESULT ' "$TMPD/wrk.out" || { echo "wrk failed with $tool" >&2; exit 1; }
    perf report -i "$TMPD/perf.data" --no-children --sort sym --percent-limit 0 2>/dev/null |
        awk '/%/ && !/^#/ { p = $1; sub("%", "", p); print p, $NF }'
}

# share FILE: "BPF PROBE RECORD CLOCK" of one profile
share() {
    awk '{ p = $1; s = $2 }
         s ~ /^bpf_prog_/ { b += p; next }
         s ~ /uprobe|handle_swbp|uretprobe/ { u += p; next }
         s ~ /^(batch_|probe_|sched_record|sched_fill|record_|stack_methods|io_frames|io_fd_kind)/ { r += p; next }
         s ~ /clock_gettime/ { c += p }
         END { printf "%.2f %.2f %.2f %.2f\n", b, u, r, c }' "$1"
}

profile none >"$TMPD/none.prof" || exit 1
read -r _ _ _ base_clock < <(share "$TMPD/none.prof")
printf 'examples/http hello, wrk -t2 -c64, perf record -C %s for %s s a tool (percent of the server CPU'"'"'s samples)\n' "$SCPU" "$SECS"
printf '%-22s %7s %7s %7s %7s %8s\n' TOOL BPF PROBE RECORD CLOCK DIRECT
for tool in "${TOOLS[@]}"; do
    profile "$tool" >"$TMPD/tool.prof" || exit 1
    read -r b u r c < <(share "$TMPD/tool.prof")
    awk -v t="$tool" -v b="$b" -v u="$u" -v r="$r" -v c="$c" -v c0="$base_clock" 'BEGIN {
        c -= c0; printf "%-22s %6.2f%% %6.2f%% %6.2f%% %6.2f%% %7.2f%%\n", t, b, u, r, c, b + u + r + c }'
done
