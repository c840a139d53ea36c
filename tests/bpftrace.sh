# tests/bpftrace.sh - the bpftrace scripts (bpftrace/*.bt) and the one-liners of
# bpftrace/ONELINERS.md, run against the real VM. Sourced by tests/run.sh (uses its
# pass/fail/skip, matches, $TMP and $VM); needs root and bpftrace.
#
# Each case runs a workload of tests/bpftrace/ whose event counts are known (1,009
# Points, 23 calls, 7 full collections, 13 writes, ...) and compares what bpftrace
# prints with tests/bpftrace/<case>.expected, using the runner's matches rules (a
# "..." line stands for any lines; a line ending in "..." matches by prefix). Before
# comparing, a leading time column (a number at the start of a line) becomes "T",
# trailing blank lines go, and bpftrace's harmless messages on stderr are dropped;
# anything else on stderr fails the case.
#
# Synchronisation, without sleeps: every workload's first act is to read the global
# Gate, and the class path holds a Gate.som that is a FIFO, so the VM blocks in
# open(2) until the test writes the class into it; the test does that once bpftrace
# has run its BEGIN probe, which bpftrace 0.17 fires after attaching every probe.
# bpftrace -p exits by itself when the VM does (SIGINT is only the fallback).

BT_DIR=tests/bpftrace
BT_TMP="$TMP/bpftrace"

# bpftrace's messages that say nothing about the script: the RLIMIT_MEMLOCK warning
# (BPF memory is accounted by cgroup on this kernel) and, without tracefs mounted,
# the uprobe_events complaint when detaching.
bt_noise() {
    grep -v -e "couldn't set RLIMIT_MEMLOCK" -e 'uprobe_events' -e 'failed to detach probe' "$@"
}

# bt_normalize FILE: a leading time column becomes "T"; the lines of a map that
# bpftrace printed sorted by value are sorted by value and then key (bpftrace
# leaves the order of equal values to the hash map); trailing blank lines go.
bt_normalize() {
    sed -E 's/^[0-9]+ +/T /' "$1" | awk '
        function flush(    i, j, t) {
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && (val[j - 1] > val[j] || (val[j - 1] == val[j] && grp[j - 1] > grp[j])); j--) {
                    t = grp[j]; grp[j] = grp[j - 1]; grp[j - 1] = t
                    t = val[j]; val[j] = val[j - 1]; val[j - 1] = t
                }
            for (i = 1; i <= n; i++) out[++m] = grp[i]
            n = 0; name = ""
        }
        /^@[A-Za-z0-9_]*\[.*\]: -?[0-9]+$/ {
            k = $0; sub(/\[.*/, "", k)
            if (k != name) flush()
            name = k; grp[++n] = $0; v = $0; sub(/.*\]: /, "", v); val[n] = v + 0
            next
        }
        { flush(); out[++m] = $0 }
        END { flush(); while (m > 0 && out[m] == "") m--; for (i = 1; i <= m; i++) print out[i] }'
}

# bt_start_vm WORKLOAD: starts the VM on tests/bpftrace/WORKLOAD.som, blocked at its
# gate; sets BT_VM_PID and BT_GATE.
bt_start_vm() {
    BT_GATE="$BT_TMP/gate.$1.$RANDOM"
    mkdir -p "$BT_GATE"
    mkfifo "$BT_GATE/Gate.som"
    "$VM" -cp "$BT_GATE" "$BT_DIR/$1.som" >"$BT_TMP/vm.out" 2>"$BT_TMP/vm.err" </dev/null &
    BT_VM_PID=$!
}

# bt_open_gate: lets the VM run (gives up after 10 s if the VM is gone).
bt_open_gate() {
    timeout 10 sh -c 'echo "Gate = Object ( )" >"$1"' sh "$BT_GATE/Gate.som"
}

# bt_wait PID SECONDS: waits for a background process; kills it (INT, then KILL)
# when it outlives the deadline. Returns its status.
bt_wait() {
    local pid=$1 i
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid" 2>/dev/null
        sleep 1
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid"
}

# bt_session WORKLOAD FUNCTION [ARGS...]: starts the VM on WORKLOAD, then runs
# FUNCTION ARGS... in the background (a bpftrace command; the VM's PID is
# $BT_VM_PID), opens the gate once bpftrace is ready, and waits for both. Output in
# $BT_TMP/out, errors in $BT_TMP/err; returns non-zero (BT_WHY says why) when the
# session itself failed.
bt_session() {
    local workload=$1 i bt
    shift
    bt_start_vm "$workload"
    : >"$BT_TMP/out"
    : >"$BT_TMP/err"
    "$@" >"$BT_TMP/out" 2>"$BT_TMP/err" &
    bt=$!
    # ready when BEGIN has printed: a line after "Attaching N probes..."
    for ((i = 0; i < 600; i++)); do
        [ "$(grep -c '' "$BT_TMP/out")" -ge 2 ] && break
        kill -0 "$bt" 2>/dev/null || break
        sleep 0.05
    done
    bt_open_gate
    bt_wait "$BT_VM_PID" 60
    BT_VM_STATUS=$?
    bt_wait "$bt" 10
    BT_STATUS=$?
    BT_WHY=""
    if [ "$BT_VM_STATUS" != 0 ]; then BT_WHY="the VM exited with status $BT_VM_STATUS: $(head -5 "$BT_TMP/vm.err")"
    elif [ "$BT_STATUS" != 0 ]; then BT_WHY="bpftrace exited with status $BT_STATUS"
    elif bt_noise "$BT_TMP/err" | grep -q .; then BT_WHY="bpftrace printed errors or warnings"
    fi
    [ -z "$BT_WHY" ]
}

bt_script() { bpftrace -B none -p "$BT_VM_PID" "$@"; }

# bt_case LABEL WORKLOAD SCRIPT [ARGS...]: a script against a workload, compared with
# tests/bpftrace/LABEL.expected.
bt_case() {
    local label=$1 workload=$2 script=$3
    shift 3
    if ! bt_session "$workload" bt_script "bpftrace/$script" "$@"; then
        fail "bpftrace/$label" "$BT_WHY
$(bt_noise "$BT_TMP/err" | head -20)
$(head -20 "$BT_TMP/out")"
        return
    fi
    bt_normalize "$BT_TMP/out" >"$BT_TMP/$label.actual"
    if matches "$BT_DIR/$label.expected" "$BT_TMP/$label.actual"; then pass "bpftrace/$label"
    else fail "bpftrace/$label" "$(diff "$BT_DIR/$label.expected" "$BT_TMP/$label.actual" | head -30)"; fi
}

bt_tier() {
    if [ "$(id -u)" != 0 ] || ! command -v bpftrace >/dev/null; then
        skip "bpftrace" "needs root and bpftrace"
        return
    fi
    if ! readelf -n "$VM" 2>/dev/null | grep -q 'Provider: squeak'; then
        skip "bpftrace" "$VM has no squeak probes"
        return
    fi
    mkdir -p "$BT_TMP"
    bt_case objectalloc Allocs objectalloc.bt
    bt_case allocsites Allocs allocsites.bt Point
    bt_case callers Allocs callers.bt Point
    bt_case methodcalls Calls methodcalls.bt
    bt_case methodcalls-time Calls methodcalls.bt 5 1
    bt_case flow Calls flow.bt Square
    bt_case gclatency Collections gclatency.bt
    bt_case userprobes Requests userprobes.bt
    bt_case userprobes-named Requests userprobes.bt request-start request-end
    bt_case syscalls-by-method Syscalls syscalls-by-method.bt
}

bt_tier
