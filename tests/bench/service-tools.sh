#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-tools.sh - what each request and scheduling tool costs a service:
# examples/http under wrk with nothing attached, and with sqreq, sqprof at 99 Hz (CPU and
# --wall), sqsched and sqio attached, each run between two with nothing attached, in
# rounds that rotate the order, one server for all of them. Reported per tool:
# requests/s and the server's own CPU time per request (user + system, /proc/PID/stat),
# each against the mean of its two neighbours with nothing attached (medians). The
# server and wrk run as tests/bench/http/load.sh runs them
# (wrk -t2, report.lua's RESULT line; LOAD=mix: mix.lua after seeding every key); a run
# with a failed request fails the bench. Root only; needs wrk. Run it under
# flock /tmp/sqvm-heavy.lock (make bench-service-tools does).
#
# On a machine with two or more CPUs the server runs alone on the last one and wrk and
# the tools' user space on the others (taskset): a tool's cost is then what it adds to
# the server's own CPU, which its probes' BPF programs run on, and not how the
# scheduler happens to share a CPU between the server and wrk (unpinned, the same run
# varied by about 10% from round to round on two CPUs; pinned, by about 1%).
#
# BPF_us/REQ is the run time the kernel measured for the tool's BPF programs during the
# run (kernel.bpf_stats_enabled, bpftool prog show: run_time_ns), per request: the part
# of the tool's cost that is its programs' own work, exact where the wall-clock figures
# are noisy. It leaves out the uprobe or perf event that runs each program (about 1 us
# a hit; a batch probe fires once per up to 256 events) and what the VM does to produce
# the events. 0 for none.
#
#   tests/bench/service-tools.sh [ROUNDS [SECONDS [CONNECTIONS [LOAD]]]]
#   (defaults 3 rounds of 5 s, 64 connections, LOAD hello: GET /hello; or mix)
#   TOOLS_ONLY="sqio;sqreq -j" tests/bench/service-tools.sh ...: only those tools (and none)
set -u
cd "$(dirname "$0")/../.."
. tests/bench/service-lib.sh
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-64}
LOAD=${4:-hello}
service_setup tests/bench/service-tools.sh
NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
    SCPU=$((NCPU - 1))
    ON_CLIENT=(taskset -c 0-$((NCPU - 2)))
else
    SCPU=""
    ON_CLIENT=()
fi
start_server SERVER PORT "$TMPD/server.out" "$SCPU" || exit 1
URL=$(load_script "$PORT" "$LOAD") || exit 1
"${ON_CLIENT[@]}" wrk -t2 -c"$CONNS" -d1s -s "$TMPD/load.lua" "$URL" >/dev/null 2>&1 # warm up

TOOLS=(none "sqreq" "sqprof -F 99" "sqprof -F 99 --wall" "sqsched" "sqio")
if [ -n "${TOOLS_ONLY:-}" ]; then IFS=';' read -r -a only <<<"$TOOLS_ONLY"; TOOLS=(none "${only[@]}"); fi

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }

# run TOOL: one wrk run with TOOL attached (none: nothing); prints "REQ_PER_S CPU_US_PER_REQ"
run() {
    local tool=$1 pid="" c0 c1 out reqs
    prog_times >"$TMPD/progs.before"
    if [ "$tool" != none ]; then
        attach_tool "$tool" "$SERVER"
        pid=$TOOL_PID
    fi
    prog_times >"$TMPD/progs.0"
    c0=$(cpu_ticks)
    out=$("${ON_CLIENT[@]}" wrk -t2 -c"$CONNS" -d"${SECS}s" -s "$TMPD/load.lua" "$URL" 2>&1)
    c1=$(cpu_ticks)
    prog_times >"$TMPD/progs.1"
    if [ -n "$pid" ]; then kill -INT "$pid"; wait "$pid" 2>/dev/null; fi
    # the run time of the programs loaded since the run began (the tool's) during wrk
    local bpf
    bpf=$(bpf_ns "$TMPD/progs.before" "$TMPD/progs.0" "$TMPD/progs.1")
    # RESULT requests=N rps=N p50=N p90=N p99=N p999=N max=N non2xx=N connect=N read=N write=N timeout=N
    local line errs
    line=$(grep '^RESULT ' <<<"$out")
    [ -n "$line" ] || { echo "wrk failed with $tool: $out" >&2; exit 1; }
    reqs=$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")
    errs=$(awk '{ n = 0; for (i = 9; i <= NF; i++) { split($i, kv, "="); n += kv[2] } print n }' <<<"$line")
    [ "$errs" = 0 ] || { echo "failed requests with $tool: $line" >&2; exit 1; }
    awk -v r="$reqs" -v s="$SECS" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v b="$bpf" \
        'BEGIN { printf "%.1f %.2f %.3f\n", r / s, r ? c * 1e6 / hz / r : 0, r ? b / 1000 / r : 0 }'
}

# Each tool's run sits between two runs with nothing attached, and is compared with their
# mean: the machine's speed drifts over seconds to minutes (other tenants), so a run is
# compared with its neighbours. Rounds rotate the tools' order.
seq=0
for ((round = 0; round < ROUNDS; round++)); do
    r=$(run none) || exit 1
    echo "$round $seq 0 $r" >>"$TMPD/results"; seq=$((seq + 1))
    for ((k = 1; k < ${#TOOLS[@]}; k++)); do
        i=$(((k - 1 + round) % (${#TOOLS[@]} - 1) + 1))
        r=$(run "${TOOLS[$i]}") || exit 1
        echo "$round $seq $i $r" >>"$TMPD/results"; seq=$((seq + 1))
        r=$(run none) || exit 1
        echo "$round $seq 0 $r" >>"$TMPD/results"; seq=$((seq + 1))
    done
done

# A tool's VS_NONE is the median of its runs' changes against the mean of the runs with
# nothing attached just before and after each, and SPREAD the lowest and highest of them.
# ratios COLUMN TOOL: TOOL's runs' COLUMN against their neighbours', as changes in percent
ratios() { awk -v c="$1" -v t="$2" '{ tool[$2] = $3; v[$2] = $(c + 1) }
    END { for (s in tool) if (tool[s] == t && t > 0) { b = (v[s - 1] + v[s + 1]) / 2; if (b > 0) printf "%.2f\n", (v[s] / b - 1) * 100 } }' "$TMPD/results"; }
printf 'examples/http %s, wrk -t2 -c%s, %s rounds of %s s, on %s CPUs%s\n' "$LOAD" "$CONNS" "$ROUNDS" "$SECS" "$NCPU" \
    "${SCPU:+, the server alone on CPU $SCPU}"
printf '(medians; VS_NONE: the median of the changes against the runs with none just before and after; SPREAD: their range)\n'
printf '%-22s %10s %8s %14s %11s %8s %14s %11s\n' TOOL REQ/S VS_NONE SPREAD CPU_us/REQ VS_NONE SPREAD BPF_us/REQ
for ((i = 0; i < ${#TOOLS[@]}; i++)); do
    rps=$(awk -v i=$i '$3 == i { print $4 }' "$TMPD/results" | median)
    cpu=$(awk -v i=$i '$3 == i { print $5 }' "$TMPD/results" | median)
    bpf=$(awk -v i=$i '$3 == i { print $6 }' "$TMPD/results" | median)
    drps=$(ratios 3 "$i" | median); srps=$(ratios 3 "$i" | spread)
    dcpu=$(ratios 4 "$i" | median); scpu=$(ratios 4 "$i" | spread)
    printf '%-22s %10.1f %+7.2f%% %14s %11.2f %+7.2f%% %14s %11.3f\n' "${TOOLS[$i]}" "$rps" "$drps" "$srps" "$cpu" "$dcpu" "$scpu" "$bpf"
done
