# SPDX-License-Identifier: BSD-2-Clause
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
BT_SEQ=0
bt_start_vm() {
    BT_SEQ=$((BT_SEQ + 1))
    BT_GATE="$BT_TMP/gate.$1.$BT_SEQ"
    mkdir -p "$BT_GATE"
    mkfifo "$BT_GATE/Gate.som"
    # on one CPU: events that bpftrace prints as they happen come from per-CPU
    # buffers, and a thread that migrates can have them printed out of order
    taskset -c "$BT_CPU" "$BT_VM" -cp "$BT_GATE" "$BT_DIR/$1.som" >"$BT_TMP/vm.out" 2>"$BT_TMP/vm.err" </dev/null &
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
# session itself failed. Ready: BEGIN has printed, or BT_READY_LINES lines are out.
bt_session() {
    local workload=$1 i bt ready=${BT_READY_LINES:-2}
    shift
    bt_start_vm "$workload"
    : >"$BT_TMP/out"
    : >"$BT_TMP/err"
    "$@" >"$BT_TMP/out" 2>"$BT_TMP/err" &
    bt=$!
    # ready when BEGIN has printed: a line after "Attaching N probes..."
    for ((i = 0; i < 600; i++)); do
        [ "$(grep -c '' "$BT_TMP/out")" -ge "$ready" ] && break
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

# bt_selected LABEL: whether tests/run.sh --filter TEXT selects bpftrace/LABEL.
bt_selected() { [ -z "${FILTER:-}" ] || [[ "bpftrace/$1" == *"$FILTER"* ]]; }

# bt_case LABEL WORKLOAD SCRIPT [ARGS...]: a script against a workload, compared with
# tests/bpftrace/LABEL.expected.
bt_case() {
    local label=$1 workload=$2 script=$3
    shift 3
    bt_selected "$label" || return 0
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

# ---- Every script: its header, a dry run, and processes.bt ----

# bt_headers: the house header of every script (shebang, "// name.bt  what", an
# "Example of usage" with output), and the executable bit.
bt_headers() {
    local f name why
    for f in bpftrace/*.bt; do
        name=$(basename "$f")
        bt_selected "header $name" || continue
        why=""
        [ "$(sed -n 1p "$f")" = "#!/usr/bin/env bpftrace" ] || why="line 1 is not #!/usr/bin/env bpftrace"
        [[ "$(sed -n 2p "$f")" == "// $name  "?* ]] || why="$why; line 2 is not '// $name  what it does'"
        grep -q '^// Example of usage' "$f" || why="$why; no 'Example of usage'"
        grep -q '^//   # bpftrace ' "$f" || why="$why; the example has no '# bpftrace' command"
        grep -q '^// USAGE: ' "$f" || why="$why; no USAGE line"
        [ -x "$f" ] || why="$why; not executable"
        if [ -z "$why" ]; then pass "bpftrace/header $name"; else fail "bpftrace/header $name" "${why#; }"; fi
    done
}

# bt_dry_runs: bpftrace -d (0.17's dry run: parse, check and compile, without
# loading) of every script against a VM waiting at its gate; the USDT probes must
# exist in the binary for it to resolve their arguments.
bt_dry_runs() {
    local f files=()
    for f in bpftrace/*.bt; do bt_selected "dry-run $(basename "$f")" && files+=("$f"); done
    [ ${#files[@]} = 0 ] && return
    bt_start_vm Allocs
    for f in "${files[@]}"; do
        if bpftrace -d -p "$BT_VM_PID" "$f" >/dev/null 2>"$BT_TMP/dry.err" && ! bt_noise "$BT_TMP/dry.err" | grep -q .; then
            pass "bpftrace/dry-run $(basename "$f")"
        else
            fail "bpftrace/dry-run $(basename "$f")" "$(bt_noise "$BT_TMP/dry.err" | head -20)"
        fi
    done
    bt_open_gate
    bt_wait "$BT_VM_PID" 30
}

# processes.bt loads and attaches everywhere (a program without green processes
# prints only its header); with green processes in the VM, it and
# syscalls-by-method.bt (which follows process switches) run Processes.som.
bt_processes() {
    if ! bt_selected "processes loads and attaches"; then :
    elif bt_session Allocs bt_script bpftrace/processes.bt; then
        bt_normalize "$BT_TMP/out" >"$BT_TMP/processes-loads.actual"
        if matches "$BT_DIR/processes-loads.expected" "$BT_TMP/processes-loads.actual"; then pass "bpftrace/processes loads and attaches"
        else fail "bpftrace/processes loads and attaches" "$(diff "$BT_DIR/processes-loads.expected" "$BT_TMP/processes-loads.actual")"; fi
    else
        fail "bpftrace/processes loads and attaches" "$BT_WHY
$(bt_noise "$BT_TMP/err" | head -20)"
    fi
    if ! "$VM" -e 'Processor' >/dev/null 2>&1; then
        bt_selected processes && skip "bpftrace/processes" "green processes not implemented"
        return
    fi
    bt_case processes Processes processes.bt
    bt_case syscalls-by-method-processes Processes syscalls-by-method.bt
    bt_waits
}

# processes.bt's wait times over Waits.som: the reader's 5 socket reads are I/O
# (15 ms or more), not running time; main's Delays are Delay time; the collector's
# 3 forced collections are GC time.
bt_waits() {
    bt_selected "processes waits" || return 0
    local got
    if ! bt_session Waits bt_script bpftrace/processes.bt; then
        fail "bpftrace/processes waits" "$BT_WHY $(bt_noise "$BT_TMP/err" | head -5)"
        return
    fi
    got=$(awk -F': ' '
        /^@activations\[[0-9]+, reader\]/ { act = $2 }
        /^@io_usecs\[[0-9]+, reader\]/ { io = $2 }
        /^@running_usecs\[[0-9]+, reader\]/ { run = $2 }
        /^@delay_usecs\[[0-9]+, main\]/ { delay = $2 }
        /^@gc_usecs\[[0-9]+, collector\]/ { gc = $2 }
        END { print act, (io >= 15000), (run < io / 5), (delay >= 15000), (gc > 0) }' "$BT_TMP/out")
    if [ "$got" = "6 1 1 1 1" ]; then pass "bpftrace/processes waits: socket reads as I/O time, Delays as Delay time, forced collections as GC time"
    else fail "bpftrace/processes waits" "'$got' $(head -30 "$BT_TMP/out")"; fi
}

# requests.bt over Routes.som: exact counts per route and status, and every
# request's latency in its route's histogram (the slow ones (3 ms) at 2,048 us or more).
bt_requests() {
    bt_selected "requests" || return 0
    local got
    if ! bt_session Routes bt_script bpftrace/requests.bt; then
        fail "bpftrace/requests" "$BT_WHY $(bt_noise "$BT_TMP/err" | head -5)"
        return
    fi
    got="$(grep '^@requests\[' "$BT_TMP/out" | LC_ALL=C sort | tr '\n' ';')$(awk '
        /^@usecs\[/ { route = $0; sub(/ +$/, "", route) }
        /^\[/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { n = $i; break }
                 hist[route] += n; if (route ~ /slow/ && $0 ~ /^\[(0|1|2|4|8|16|32|64|128|256|512|1K),/) early++ }
        END { print hist["@usecs[GET /fast]:"], hist["@usecs[GET /slow]:"], early + 0 }' "$BT_TMP/out")"
    if [ "$got" = "@requests[GET /fast, 200]: 20;@requests[GET /slow, 200]: 9;@requests[GET /slow, 503]: 1;20 10 0" ]; then
        pass "bpftrace/requests: 20 + 10 requests by route and status, each in its route's latency histogram, the slow ones (3 ms) at 2,048 us or more"
    else fail "bpftrace/requests" "'$got' $(head -30 "$BT_TMP/out")"; fi
}

# bt_per_second FILE: the seconds of a per-second script (exceptions.bt, dnu.bt) that
# counted something, from its bt_normalize'd output (maps in a known order): "N: its
# @per_second lines" for each "HH:MM:SS N ..." line with N > 0, joined by " | ".
bt_per_second() {
    awk '
        function flush() { if (n != "") out = out (out == "" ? "" : " | ") n ":" l; n = ""; l = "" }
        /^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] [0-9]+ / { flush(); if ($2 > 0) n = $2; next }
        /^@per_second\[/ && n != "" { l = l (l == "" ? " " : ", ") $0; next }
        { flush() }
        END { flush(); print out }' "$1"
}

# bt_storm LABEL WORKLOAD SCRIPT GROUPS: a per-second script against a workload whose
# bursts are known: its output matches tests/bpftrace/LABEL.expected (the totals), and
# its seconds are GROUPS (bt_per_second). The gate opens once the script has printed
# its first second, so that a burst that follows at once (a few ms) is in the next
# second's lines whole, and one 1.4 s later (Signals.som) in a later second's.
bt_storm() {
    local label=$1 workload=$2 script=$3 want=$4 got
    bt_selected "$label" || return 0
    if ! BT_READY_LINES=3 bt_session "$workload" bt_script "bpftrace/$script"; then
        fail "bpftrace/$label" "$BT_WHY
$(bt_noise "$BT_TMP/err" | head -20)
$(head -20 "$BT_TMP/out")"
        return
    fi
    bt_normalize "$BT_TMP/out" >"$BT_TMP/$label.actual"
    got=$(bt_per_second "$BT_TMP/$label.actual")
    if matches "$BT_DIR/$label.expected" "$BT_TMP/$label.actual" && [ "$got" = "$want" ]; then pass "bpftrace/$label"
    else fail "bpftrace/$label" "seconds: $got
want:     $want
$(diff "$BT_DIR/$label.expected" "$BT_TMP/$label.actual" | head -30)"; fi
}

# ---- The one-liners of bpftrace/ONELINERS.md ----

# bt_extract_oneliners: splits ONELINERS.md into $BT_TMP/ol/N.cmd (the command of a
# ```sh block that starts with "bpftrace"), N.mode ("exact" or "timing", from the
# info string of the output block that follows: ```text or ```text timing) and
# N.expected (that block's lines). Prints the number of one-liners.
bt_extract_oneliners() {
    rm -rf "$BT_TMP/ol"
    mkdir -p "$BT_TMP/ol"
    awk -v dir="$BT_TMP/ol" '
        /^```sh$/ { incmd = 1; cmd = ""; next }
        incmd && /^```$/ { incmd = 0; if (cmd ~ /^bpftrace /) { n++; print cmd > (dir "/" n ".cmd"); close(dir "/" n ".cmd"); want = 1 } next }
        incmd { cmd = cmd (cmd == "" ? "" : " ") $0; next }
        want && /^```text/ { want = 0; inout = 1; mode = ($0 ~ /timing/) ? "timing" : "exact"
                             print mode > (dir "/" n ".mode"); close(dir "/" n ".mode")
                             printf "" > (dir "/" n ".expected"); next }
        inout && /^```$/ { inout = 0; close(dir "/" n ".expected"); next }
        inout { print > (dir "/" n ".expected") }
        END { print n + 0 }' bpftrace/ONELINERS.md
}

# bt_oneliner_shape FILE: what a timing output must keep: its lines without the
# histogram buckets, with every number replaced by N, in sorted order (bpftrace
# orders maps by their values).
bt_oneliner_shape() {
    grep -v -E '^\[[^]]*[]\)] +[0-9]+ \|' "$1" | sed -E 's/[0-9]+/N/g' | LC_ALL=C sort
}

# bt_oneliner CMD: runs a one-liner as written, with $PID set to the VM and bpftrace
# given -B none and (when the program has none) a BEGIN probe that says it is ready.
bt_oneliner() {
    local PID=$BT_VM_PID
    bpftrace() {
        local args=("-B" "none") a prev=""
        for a in "$@"; do
            if [ "$prev" = "-e" ] && [[ "$a" != *BEGIN* ]]; then a="$a BEGIN { printf(\"--ready--\\n\"); }"; fi
            args+=("$a")
            prev=$a
        done
        command bpftrace "${args[@]}"
    }
    eval "$1"
}

bt_oneliners() {
    local n i cmd label
    n=$(bt_extract_oneliners)
    if bt_selected ONELINERS.md; then
        if [ "$n" -ge 15 ]; then pass "bpftrace/ONELINERS.md has $n one-liners"
        else fail "bpftrace/ONELINERS.md" "only $n one-liners (want at least 15)"; fi
    fi
    for ((i = 1; i <= n; i++)); do
        cmd=$(cat "$BT_TMP/ol/$i.cmd")
        label="bpftrace/oneliner $i ($(grep -o -m1 'usdt::squeak:[a-z_]*\|tracepoint:[a-z_]*:[a-z_]*' "$BT_TMP/ol/$i.cmd" | head -1))"
        bt_selected "${label#bpftrace/}" || continue
        if [ ! -f "$BT_TMP/ol/$i.mode" ]; then fail "$label" "no output block after: $cmd"; continue; fi
        if ! bt_session OneLiners bt_oneliner "$cmd"; then
            fail "$label" "$BT_WHY
$cmd
$(bt_noise "$BT_TMP/err" | head -20)"
            continue
        fi
        cp "$BT_TMP/out" "$BT_TMP/ol/$i.out"
        grep -v -e '^Attaching [0-9]* probes*\.\.\.$' -e '^--ready--$' "$BT_TMP/out" >"$BT_TMP/ol/$i.raw"
        bt_normalize "$BT_TMP/ol/$i.raw" >"$BT_TMP/ol/$i.actual"
        grep -v '^Attaching [0-9]* probes*\.\.\.$' "$BT_TMP/ol/$i.expected" >"$BT_TMP/ol/$i.want.raw"
        bt_normalize "$BT_TMP/ol/$i.want.raw" >"$BT_TMP/ol/$i.want"
        if [ "$(cat "$BT_TMP/ol/$i.mode")" = timing ]; then
            bt_oneliner_shape "$BT_TMP/ol/$i.actual" >"$BT_TMP/ol/$i.actual.shape"
            bt_oneliner_shape "$BT_TMP/ol/$i.want" >"$BT_TMP/ol/$i.want.shape"
            if diff "$BT_TMP/ol/$i.want.shape" "$BT_TMP/ol/$i.actual.shape" >"$BT_TMP/ol/$i.diff"; then pass "$label"
            else fail "$label" "$cmd
$(cat "$BT_TMP/ol/$i.diff")"; fi
        elif diff "$BT_TMP/ol/$i.want" "$BT_TMP/ol/$i.actual" >"$BT_TMP/ol/$i.diff"; then pass "$label"
        else fail "$label" "$cmd
$(head -30 "$BT_TMP/ol/$i.diff")"; fi
    done
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
    # a private copy: bpftrace 0.17 attaches to the binary's path (through
    # /proc/PID/root), so a rebuild of $VM while a case runs would leave the
    # probes on the new file and the running VM untraced
    BT_VM="$BT_TMP/sqvm"
    cp "$VM" "$BT_VM"
    BT_CPU=$(awk '/^Cpus_allowed_list/ { split($2, a, /[-,]/); print a[1] }' /proc/self/status)
    bt_headers
    bt_dry_runs
    bt_case objectalloc Allocs objectalloc.bt
    bt_case allocsites Allocs allocsites.bt Point
    bt_case callers Allocs callers.bt Point
    bt_case methodcalls Calls methodcalls.bt
    bt_case methodcalls-time Calls methodcalls.bt 6 time
    bt_case flow Calls flow.bt Square
    bt_case gclatency Collections gclatency.bt
    bt_case userprobes Requests userprobes.bt
    bt_case userprobes-named Requests userprobes.bt request-start request-end
    bt_case syscalls-by-method Syscalls syscalls-by-method.bt
    bt_processes
    bt_requests
    bt_storm exceptions Signals exceptions.bt \
        "17: @per_second[BadFrame, Decoder, decode:]: 17 | 7: @per_second[ZeroDivide, Signals, divide]: 1, @per_second[BadFrame, Decoder, checksum:]: 6"
    bt_storm dnu Polls dnu.bt "38: @per_second[Legacy, refresh:]: 7, @per_second[Legacy, frobnicate]: 31"
    bt_oneliners
}

bt_tier
