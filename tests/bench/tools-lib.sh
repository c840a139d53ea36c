# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/tools-lib.sh - the timing helpers of tests/bench/tools.sh and
# tests/bench/attach.sh. Sourced; the caller sets TMPD (a temp dir) and STARTED (an array:
# every process started, ended by PID at exit).

now_ms() { date +%s%3N; }

# stop PID: SIGINT, and SIGKILL if it has not exited 3 s later (bpftrace 0.17 can miss a
# SIGINT that arrives while it is still setting up)
stop() {
    kill -INT "$1" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# startup LABEL MARKER CMD...: milliseconds from launch until CMD prints MARKER
startup() {
    local label=$1 marker=$2 t0 t1 pid
    shift 2
    rm -f "$TMPD/out" # else the first polls can read the last run's marker
    t0=$(now_ms)
    "$@" >"$TMPD/out" 2>&1 &
    pid=$!
    STARTED+=("$pid")
    for _ in $(seq 600); do grep -qs "$marker" "$TMPD/out" && break; sleep 0.01; done
    t1=$(now_ms)
    stop "$pid"
    printf '%-34s %6d ms\n' "$label" $((t1 - t0))
}
