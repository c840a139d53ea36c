# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/service-lib.sh - what the service benches share (sourced, not run): a private
# copy of the VM, examples/http started on a CPU, and wrk's load script for it.
#
#   service_setup NAME         root, wrk, a fresh build, $TMPD, tracefs; NAME for errors
#   start_server PID PORT FILE CPU
#                              a server on CPU (taskset; "" for any), its output in FILE:
#                              its pid and port in the variables named PID and PORT
#   load_script PORT LOAD      writes $TMPD/load.lua (report.lua's RESULT line; LOAD mix:
#                              mix.lua, every key stored first) and prints the URL
#   prog_times                 the BPF programs loaded now, "ID RUN_TIME_NS" a line
#   bpf_ns BEFORE T0 T1        the run time, between prog_times files T0 and T1, of the
#                              programs that were not loaded at BEFORE (a tool's)
#   (with kernel.bpf_stats_enabled=1, which service_setup sets and its EXIT trap restores)
#   attach_tool TOOL PID       build/tools/TOOL (with its flags) -p PID on the client CPUs
#                              ($ON_CLIENT), its output in $TMPD/tool.out, its pid in
#                              TOOL_PID once it says it traces; a tool that could not
#                              attach fails the bench (it would be measured as free)
#   spin_setup LOAD            tests/bench/http/spinload.c built as $TMPD/spinload, and its
#                              requests in SPIN_REQS: GET /hello, or (mix) mix.lua's cycle
#                              over its 64 keys
#   cpu_ns PID                 the CPU time PID has had (/proc/PID/schedstat), ns
#   median, spread             of numbers on stdin: the median; "LOW..HIGH"

service_setup() {
    local name=$1
    [ "$(id -u)" = 0 ] || { echo "$name: needs root (BPF)" >&2; exit 1; }
    [ -f examples/http/Server.som ] || { echo "$name: examples/http is not in this tree" >&2; exit 1; }
    command -v wrk >/dev/null || { echo "$name: needs wrk (scripts/deps.sh)" >&2; exit 1; }
    make -s all >/dev/null || exit 1
    TMPD=$(mktemp -d)
    # sqio's page-cache tracepoint is found through tracefs (a fresh boot may not have it)
    [ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    cp build/sqvm "$TMPD/sqvm" # a private copy: nobody else's probes on it, ours on nobody else's
    STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
    sysctl -q kernel.bpf_stats_enabled=1 2>/dev/null
    SERVERS=""
    trap 'kill $SERVERS 2>/dev/null; sysctl -q kernel.bpf_stats_enabled="$STATS_WAS" 2>/dev/null; rm -rf "$TMPD"' EXIT
}

start_server() {
    local pidvar=$1 portvar=$2 out=$3 cpu=$4 port
    if [ -n "$cpu" ]; then
        taskset -c "$cpu" "$TMPD/sqvm" -cp examples/http examples/http/Server.som 0 >"$out" 2>&1 </dev/null &
    else
        "$TMPD/sqvm" -cp examples/http examples/http/Server.som 0 >"$out" 2>&1 </dev/null &
    fi
    printf -v "$pidvar" '%s' "$!"
    SERVERS="$SERVERS $!"
    for _ in $(seq 500); do grep -q '^listening on ' "$out" && break; sleep 0.01; done
    port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$out")
    [ -n "$port" ] || { echo "the server did not start: $(head -3 "$out")" >&2; return 1; }
    printf -v "$portvar" '%s' "$port"
}

load_script() {
    local port=$1 load=$2 k
    case $load in
    hello) cat tests/bench/http/report.lua >"$TMPD/load.lua"; echo "http://127.0.0.1:$port/hello" ;;
    mix) cat tests/bench/http/mix.lua tests/bench/http/report.lua >"$TMPD/load.lua"
        for k in $(seq 0 63); do # every key of mix.lua stored first, as load.sh does
            exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
            printf 'PUT /kv/k%d HTTP/1.1\r\nHost: load\r\nContent-Length: 4\r\nConnection: close\r\n\r\nseed' "$k" >&3
            cat <&3 >/dev/null
            exec 3>&-
        done
        echo "http://127.0.0.1:$port/" ;;
    *) echo "LOAD is hello or mix, not $load" >&2; return 1 ;;
    esac
}

prog_times() { bpftool prog show -j 2>/dev/null | jq -r '.[] | "\(.id) \(.run_time_ns // 0)"'; }

bpf_ns() {
    awk 'FILENAME == ARGV[1] { old[$1] = 1; next }
         FILENAME == ARGV[2] { t0[$1] = $2; next }
         !($1 in old) { n += $2 - t0[$1] } END { print n + 0 }' "$1" "$2" "$3"
}

attach_tool() {
    local tool=$1 pid=$2
    # shellcheck disable=SC2086
    "${ON_CLIENT[@]}" build/tools/$tool -p "$pid" >"$TMPD/tool.out" 2>&1 &
    TOOL_PID=$!
    for _ in $(seq 500); do grep -qE '^(Tracing|Sampling) ' "$TMPD/tool.out" 2>/dev/null && return 0; sleep 0.01; done
    echo "$tool did not attach: $(head -3 "$TMPD/tool.out")" >&2
    kill "$TOOL_PID" 2>/dev/null
    exit 1
}

spin_setup() {
    local k
    cc -O2 -o "$TMPD/spinload" tests/bench/http/spinload.c || return 1
    SPIN_REQS=("GET /hello")
    if [ "$1" = mix ]; then
        SPIN_REQS=()
        for k in $(seq 0 63); do
            SPIN_REQS+=("GET /hello" "PUT /kv/k$k value $k" "GET /kv/k$k" "GET /work?n=100" "GET /static/index.html")
        done
    fi
}

cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%+.1f..%+.1f", lo, hi }'; }
