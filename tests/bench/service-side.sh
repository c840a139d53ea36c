#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-side.sh - what each request and scheduling tool costs a service,
# measured side by side: two examples/http servers share the last CPU, each under its
# own wrk on the other CPUs, and a tool is attached to one of them (A and B in turn).
# The traced server's CPU time per request (/proc/PID/schedstat, ns) against the
# untraced one's, over the same seconds, is the tool's cost; and so is its share of the
# requests served. Whatever slows the machine in those seconds (other tenants, the
# host's clock) slows both servers alike, so a run's ratio is steady where the
# sequential runs of service-tools.sh (one server, none and tool minutes apart) move
# by tens of percent on this shared machine: the `none` row (nothing attached, A and B
# compared as if one were traced) is the method's own error.
#
# The client: CLIENT=spin (the default) is tests/bench/http/spinload.c, which polls its
# sockets without ever sleeping on them, so that the server never pays for waking its
# client (on loopback a response wakes a client that sleeps, in the server's context: an
# IPI, 6% to 15% of a /hello server's CPU under wrk, moving by more than a tool costs, and
# growing when a tool slows the server, since the client then sleeps more: a remote
# client's wakeups are never the server's); CLIENT=wrk is wrk, as make load runs it.
#
# What it does not show: a server alone on its CPU keeps its caches between requests,
# while here two share one, so a tool's own cache footprint may cost a little more
# than it would in production; service-tools.sh measures that layout (noisily).
#
# BPF_us/REQ is the kernel's run time of the tool's programs (kernel.bpf_stats_enabled)
# per request of the traced server.
#
#   tests/bench/service-side.sh [ROUNDS [SECONDS [CONNECTIONS [LOAD]]]]
#   (defaults 8 rounds of 3 s, 32 connections per server, LOAD hello: GET /hello; or mix)
#   TOOLS_ONLY="sqreq;sqio -j" tests/bench/service-side.sh ...: only those tools (and none)
#   CLIENT=wrk tests/bench/service-side.sh ...: wrk -t1 for the load instead of spinload
# Root only; needs wrk and two CPUs. Run it under flock /tmp/sqvm-heavy.lock (make
# bench-service-side does).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/service-lib.sh
ROUNDS=${1:-8}
SECS=${2:-3}
CONNS=${3:-32}
LOAD=${4:-hello}
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] || { echo "tests/bench/service-side.sh: needs two CPUs (the servers share one)" >&2; exit 1; }
service_setup tests/bench/service-side.sh
SCPU=$((NCPU - 1))
ON_CLIENT=(taskset -c 0-$((NCPU - 2)))

start_server A PORT_A "$TMPD/a.out" "$SCPU" || exit 1
start_server B PORT_B "$TMPD/b.out" "$SCPU" || exit 1
URL_A=$(load_script "$PORT_A" "$LOAD") && URL_B=$(load_script "$PORT_B" "$LOAD") || exit 1
CLIENT=${CLIENT:-spin}
case $CLIENT in
spin) spin_setup "$LOAD" || exit 1 ;;
wrk) ;;
*) echo "CLIENT is spin or wrk, not $CLIENT" >&2; exit 1 ;;
esac

# load SECONDS URL OUT: one run of the client on the client CPUs; its RESULT line in OUT
load() {
    if [ "$CLIENT" = spin ]; then
        "${ON_CLIENT[@]}" "$TMPD/spinload" -c "$CONNS" -d "$1" "$(sed 's|.*:\([0-9]*\)/.*|\1|' <<<"$2")" \
            "${SPIN_REQS[@]}" >"$3" 2>&1
    else
        "${ON_CLIENT[@]}" wrk -t1 -c"$CONNS" -d"$1s" -s "$TMPD/load.lua" "$2" >"$3" 2>&1
    fi
}

# requests OUT: the requests of a wrk run, failing the bench on any failed request
requests() {
    local line errs
    line=$(grep '^RESULT ' "$1") || { echo "wrk failed: $(cat "$1")" >&2; return 1; }
    errs=$(awk '{ n = 0; for (i = 9; i <= NF; i++) { split($i, kv, "="); n += kv[2] } print n }' <<<"$line")
    [ "$errs" = 0 ] || { echo "failed requests: $line" >&2; return 1; }
    sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line"
}

load 1 "$URL_A" "$TMPD/wa" & w=$!; load 1 "$URL_B" "$TMPD/wb"; wait "$w" # warm up

# run TOOL TRACED: both servers under load, TOOL attached to TRACED (A or B; none:
# nothing); prints "CPU_CHANGE% REQ_CHANGE% CPU_US_PER_REQ BPF_US_PER_REQ" of the traced
# server against the other
run() {
    local tool=$1 traced=$2 tp="" a0 b0 a1 b1 ra rb w
    prog_times >"$TMPD/progs.before"
    if [ "$tool" != none ]; then
        if [ "$traced" = A ]; then attach_tool "$tool" "$A"; else attach_tool "$tool" "$B"; fi
        tp=$TOOL_PID
    fi
    prog_times >"$TMPD/progs.0"
    a0=$(cpu_ns "$A"); b0=$(cpu_ns "$B")
    load "$SECS" "$URL_A" "$TMPD/wa" & w=$!
    load "$SECS" "$URL_B" "$TMPD/wb"
    wait "$w"
    a1=$(cpu_ns "$A"); b1=$(cpu_ns "$B")
    prog_times >"$TMPD/progs.1"
    if [ -n "$tp" ]; then kill -INT "$tp"; wait "$tp" 2>/dev/null; fi
    ra=$(requests "$TMPD/wa") && rb=$(requests "$TMPD/wb") || exit 1
    awk -v ca=$((a1 - a0)) -v cb=$((b1 - b0)) -v ra="$ra" -v rb="$rb" -v t="$traced" \
        -v bpf="$(bpf_ns "$TMPD/progs.before" "$TMPD/progs.0" "$TMPD/progs.1")" 'BEGIN {
            ua = ca / ra; ub = cb / rb
            if (t == "A") { ut = ua; uo = ub; rt = ra; ro = rb } else { ut = ub; uo = ua; rt = rb; ro = ra }
            printf "%.2f %.2f %.2f %.3f\n", (ut / uo - 1) * 100, (rt / ro - 1) * 100, ut / 1000, bpf / 1000 / rt }'
}

TOOLS=(none "sqreq" "sqprof -F 99" "sqprof -F 99 --wall" "sqsched" "sqio")
if [ -n "${TOOLS_ONLY:-}" ]; then IFS=';' read -r -a only <<<"$TOOLS_ONLY"; TOOLS=(none "${only[@]}"); fi

# Rounds rotate the tools' order; each tool is attached to A and to B in turn.
for ((round = 0; round < ROUNDS; round++)); do
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do
        i=$(((k + round) % ${#TOOLS[@]}))
        side=$([ $((round % 2)) = 0 ] && echo A || echo B)
        r=$(run "${TOOLS[$i]}" "$side") || exit 1
        echo "$i $r" >>"$TMPD/results"
    done
done

printf 'examples/http %s, two servers on CPU %s, each under %s -c%s, %s rounds of %s s\n' \
    "$LOAD" "$SCPU" "$([ "$CLIENT" = spin ] && echo spinload || echo 'wrk -t1')" "$CONNS" "$ROUNDS" "$SECS"
printf '(the traced server against the other in the same seconds: medians, and the range of the runs)\n'
printf '%-22s %11s %9s %14s %9s %14s %11s\n' TOOL CPU_us/REQ CPU_VS RANGE REQS_VS RANGE BPF_us/REQ
for ((i = 0; i < ${#TOOLS[@]}; i++)); do
    col() { awk -v i="$i" -v c="$1" '$1 == i { print $c }' "$TMPD/results"; }
    printf '%-22s %11.2f %+8.2f%% %14s %+8.2f%% %14s %11.3f\n' "${TOOLS[$i]}" "$(col 4 | median)" \
        "$(col 2 | median)" "$(col 2 | spread)" "$(col 3 | median)" "$(col 3 | spread)" "$(col 5 | median)"
done
