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
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-64}
LOAD=${4:-hello}
if [ "$(id -u)" != 0 ]; then echo "tests/bench/service-tools.sh: needs root (BPF)" >&2; exit 1; fi
if [ ! -f examples/http/Server.som ]; then echo "tests/bench/service-tools.sh: examples/http is not in this tree" >&2; exit 1; fi
command -v wrk >/dev/null || { echo "tests/bench/service-tools.sh: needs wrk (scripts/deps.sh)" >&2; exit 1; }
make -s all >/dev/null || exit 1
TMPD=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMPD"' EXIT
# sqio's page-cache tracepoint is found through tracefs (a fresh boot may not have it)
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
cp build/sqvm "$TMPD/sqvm" # a private copy: nobody else's probes on it, ours on nobody else's
NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
    ON_SERVER=(taskset -c $((NCPU - 1)))
    ON_CLIENT=(taskset -c 0-$((NCPU - 2)))
else
    ON_SERVER=()
    ON_CLIENT=()
fi

"${ON_SERVER[@]}" "$TMPD/sqvm" -cp examples/http examples/http/Server.som 0 >"$TMPD/server.out" 2>&1 </dev/null &
SERVER=$!
for _ in $(seq 500); do grep -q '^listening on ' "$TMPD/server.out" && break; sleep 0.01; done
PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$TMPD/server.out")
[ -n "$PORT" ] || { echo "the server did not start: $(head -3 "$TMPD/server.out")" >&2; exit 1; }
case $LOAD in
hello) cat tests/bench/http/report.lua >"$TMPD/load.lua"; URL="http://127.0.0.1:$PORT/hello" ;;
mix) cat tests/bench/http/mix.lua tests/bench/http/report.lua >"$TMPD/load.lua"; URL="http://127.0.0.1:$PORT/"
    for k in $(seq 0 63); do # every key of mix.lua stored first, as load.sh does
        exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
        printf 'PUT /kv/k%d HTTP/1.1\r\nHost: load\r\nContent-Length: 4\r\nConnection: close\r\n\r\nseed' "$k" >&3
        cat <&3 >/dev/null
        exec 3>&-
    done ;;
*) echo "tests/bench/service-tools.sh: LOAD is hello or mix, not $LOAD" >&2; exit 1 ;;
esac
wrk -t2 -c"$CONNS" -d1s -s "$TMPD/load.lua" "$URL" >/dev/null 2>&1 # warm up

TOOLS=(none "sqreq" "sqprof -F 99" "sqprof -F 99 --wall" "sqsched" "sqio")
if [ -n "${TOOLS_ONLY:-}" ]; then IFS=';' read -r -a only <<<"$TOOLS_ONLY"; TOOLS=(none "${only[@]}"); fi

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }

# The BPF programs loaded now, "ID RUN_TIME_NS" a line (bpftool's JSON, read with jq).
prog_times() { bpftool prog show -j 2>/dev/null | jq -r '.[] | "\(.id) \(.run_time_ns // 0)"'; }
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -q kernel.bpf_stats_enabled=1 2>/dev/null
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; sysctl -q kernel.bpf_stats_enabled="$STATS_WAS" 2>/dev/null; rm -rf "$TMPD"' EXIT

# run TOOL: one wrk run with TOOL attached (none: nothing); prints "REQ_PER_S CPU_US_PER_REQ"
run() {
    local tool=$1 pid="" c0 c1 out reqs
    prog_times >"$TMPD/progs.before"
    if [ "$tool" != none ]; then
        # shellcheck disable=SC2086
        "${ON_CLIENT[@]}" build/tools/$tool -p "$SERVER" >"$TMPD/tool.out" 2>&1 &
        pid=$!
        for _ in $(seq 500); do grep -qE '^(Tracing|Sampling) ' "$TMPD/tool.out" && break; sleep 0.01; done
        # a tool that could not attach (tracefs unmounted: no tracepoints) would be
        # measured as costing nothing
        grep -qE '^(Tracing|Sampling) ' "$TMPD/tool.out" ||
            { echo "$tool did not attach: $(head -3 "$TMPD/tool.out")" >&2; kill "$pid" 2>/dev/null; exit 1; }
    fi
    prog_times >"$TMPD/progs.0"
    c0=$(cpu_ticks)
    out=$("${ON_CLIENT[@]}" wrk -t2 -c"$CONNS" -d"${SECS}s" -s "$TMPD/load.lua" "$URL" 2>&1)
    c1=$(cpu_ticks)
    prog_times >"$TMPD/progs.1"
    if [ -n "$pid" ]; then kill -INT "$pid"; wait "$pid" 2>/dev/null; fi
    # the run time of the programs loaded since the run began (the tool's) during wrk
    local bpf_ns
    bpf_ns=$(awk 'FILENAME ~ /before$/ { old[$1] = 1; next }
                  FILENAME ~ /0$/ { t0[$1] = $2; next }
                  !($1 in old) { n += $2 - t0[$1] } END { print n + 0 }' \
        "$TMPD/progs.before" "$TMPD/progs.0" "$TMPD/progs.1")
    # RESULT requests=N rps=N p50=N p90=N p99=N p999=N max=N non2xx=N connect=N read=N write=N timeout=N
    local line errs
    line=$(grep '^RESULT ' <<<"$out")
    [ -n "$line" ] || { echo "wrk failed with $tool: $out" >&2; exit 1; }
    reqs=$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")
    errs=$(awk '{ n = 0; for (i = 9; i <= NF; i++) { split($i, kv, "="); n += kv[2] } print n }' <<<"$line")
    [ "$errs" = 0 ] || { echo "failed requests with $tool: $line" >&2; exit 1; }
    awk -v r="$reqs" -v s="$SECS" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v b="$bpf_ns" \
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
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# ratios COLUMN TOOL: TOOL's runs' COLUMN against their neighbours', as changes in percent
ratios() { awk -v c="$1" -v t="$2" '{ tool[$2] = $3; v[$2] = $(c + 1) }
    END { for (s in tool) if (tool[s] == t && t > 0) { b = (v[s - 1] + v[s + 1]) / 2; if (b > 0) printf "%.2f\n", (v[s] / b - 1) * 100 } }' "$TMPD/results"; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%+.1f..%+.1f", lo, hi }'; }
printf 'examples/http %s, wrk -t2 -c%s, %s rounds of %s s, on %s CPUs%s\n' "$LOAD" "$CONNS" "$ROUNDS" "$SECS" "$NCPU" \
    "$([ "$NCPU" -ge 2 ] && echo ", the server alone on CPU $((NCPU - 1))")"
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
