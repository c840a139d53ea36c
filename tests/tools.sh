# SPDX-License-Identifier: BSD-2-Clause
# tests/tools.sh - the eBPF tools (build/tools/sqalloc, sqgc, sqflow) against the real VM
# running the workloads of tests/tools/, whose event counts are known in advance; sourced
# by tests/run.sh (uses its pass/fail/skip, $VM and $TMP). Needs root (BPF, uprobes).
#
# Each case runs a private copy of the VM: uprobes belong to a binary's inode, so someone
# else tracing $VM system-wide (a bpftrace one-liner, another test tier) neither slows
# these tests down nor sees their processes, and the system-wide cases see only ours.
#
# Synchronisation without fixed sleeps: a workload first waits for a "go" file (tt_go),
# sleeping in a loop; once the VM is seen in that loop, the tool is started, its
# "Tracing..." line (printed once attached) is awaited, then the go file is created.
# With -p the tool exits by itself when the VM does. Each tool runs under a timeout.

TT_TOOLS=build/tools
TT_DIR=tests/tools
TT_TMP="$TMP/tools"
TT_TIMEOUT=60

# Output with the PID replaced by <pid> where it stands as one ("PID N", the PID and TID
# columns: never a count that happens to equal it, as 1032 objects once did for PID
# 1032), the test's temporary folder by <tmp>, runs of
# blanks squeezed, and sqflow's per-call durations dropped, so that expected outputs hold
# only what is deterministic. sqflow's call lines keep their indentation: their PID and
# TID columns have a fixed width (16 characters), the call follows.
tt_normalize() { # pid < text
    awk -v pid="$1" '
        function n(x) { return x == pid ? "<pid>" : x }
        /^[0-9]+ +[0-9]+ / && substr($0, 17) ~ /^ *(->|<-) / {
            rest = substr($0, 17)
            sub(/  [0-9]+\.[0-9][0-9][0-9] (us|ms|s)$/, "", rest)
            print "F|" n($1) " " n($2) " " rest
            next
        }
        { print }' |
        sed -E -e "/^F\|/!{s/\bPID $1\b/PID <pid>/g; s/^$1( +)$1\b/<pid>\1<pid>/; s/ +/ /g}" -e 's/^F\|//' -e "s|$TT_TMP|<tmp>|g"
}

# Starts a VM on a workload that waits for the go file; sets TT_VM_PID and TT_GO.
tt_start_vm() { # vm-flags... -- workload args...
    local flags=()
    while [ "$1" != "--" ]; do flags+=("$1"); shift; done
    shift
    TT_GO="$TT_TMP/go.$RANDOM$RANDOM"
    rm -f "$TT_GO"
    : >"$TT_TMP/vm.out"
    "$TT_TMP/sqvm" "${flags[@]}" "$@" "$TT_GO" >>"$TT_TMP/vm.out" 2>&1 </dev/null &
    TT_VM_PID=$!
    if ! tt_wait_vm_waiting "$TT_VM_PID"; then
        wait "$TT_VM_PID"
        echo "tools.sh: the VM ($*) did not reach its wait loop: status $?: $(head -5 "$TT_TMP/vm.out")" >&2
    fi
}

tt_go() { touch "$TT_GO"; }

# Waits until the process runs the VM (a chroot has exec'ed it) and sleeps in its
# workload's waitFor: loop: a tool attached earlier would also count the VM's start-up.
# (The VM's start-up never sleeps; its stdout, a file here, is not flushed until exit.)
tt_wait_vm_waiting() { # pid
    local i
    for ((i = 0; i < 1000; i++)); do
        kill -0 "$1" 2>/dev/null || return 1
        if readlink "/proc/$1/exe" | grep -q '/sqvm$' &&
            grep -q nanosleep "/proc/$1/wchan" 2>/dev/null; then
            return 0
        fi
        sleep 0.01
    done
    return 1
}

# Starts a tool in the background (stdout, stderr to files); sets TT_TOOL_PID.
tt_start_tool() { # out err tool args...
    local out=$1 err=$2 tool=$3
    shift 3
    start_bg "$out" "$err" "$TT_TIMEOUT" "$TT_TOOLS/$tool" "$@"
    TT_TOOL_PID=$BG_PID
}

# Waits until the tool has printed its "Tracing..." line, or has died. 0 when attached.
tt_wait_attached() { # out err
    wait_line "$1" "$2" '^Tracing ' "$TT_TOOL_PID"
}

# Waits for the tool to exit; sets TT_STATUS.
tt_wait_tool() {
    wait "$TT_TOOL_PID"
    TT_STATUS=$?
}

# Lets the VM of a case finish (creating its go file if the case did not) and reaps it.
tt_end_vm() {
    [ -f "$TT_GO" ] || tt_go
    wait "$TT_VM_PID" 2>/dev/null
    TT_VM_STATUS=$?
}

# The whole -p sequence: VM waiting, tool attached, go, both done. Output in
# $TT_TMP/out and $TT_TMP/err; TT_STATUS is the tool's exit status.
tt_run_pid() { # vm-flags... -- workload -- tool args...
    local vmargs=() workload
    while [ "$1" != "--" ]; do vmargs+=("$1"); shift; done
    shift
    workload=$1
    shift 2
    tt_start_vm "${vmargs[@]}" -- "$TT_DIR/$workload.som"
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" "$@" -p "$TT_VM_PID"
    if ! tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"; then
        tt_end_vm
        tt_wait_tool
        return 1
    fi
    tt_go
    tt_end_vm
    tt_wait_tool
    return 0
}

# Compares the normalized output with an expected file; pass or fail with a diff.
tt_expect() { # label expected-file actual-file pid
    tt_normalize "$4" <"$3" >"$3.norm"
    if [ "$TT_STATUS" = 0 ] && diff -u "$2" "$3.norm" >"$TT_TMP/diff"; then
        pass "$1"
    else
        fail "$1" "exit status $TT_STATUS (VM: ${TT_VM_STATUS:-?}); stderr: $(head -5 "$TT_TMP/err")
$(head -40 "$TT_TMP/diff")"
    fi
}

# JSON outputs are checked with jq; without it those cases are skipped.
tt_have_jq() { # label
    command -v jq >/dev/null && return 0
    skip "$1" "jq is not installed"
    return 1
}

tt_failed_start() { # label
    fail "$1" "the tool did not attach (status $TT_STATUS): $(head -5 "$TT_TMP/err")"
}

# ---- sqalloc -------------------------------------------------------------------

tt_sqalloc() {
    if tt_run_pid -- AllocCount -- sqalloc; then
        # the expected outputs assume these sizes; a new object layout needs new ones
        if ! grep -qx 'Point 24' "$TT_TMP/vm.out" || ! grep -qx 'Rectangle 24' "$TT_TMP/vm.out"; then
            fail "tools/sqalloc sizes" "tests/tools/*.expected assume 24-byte Points and Rectangles: $(cat "$TT_TMP/vm.out")"
        fi
        tt_expect "tools/sqalloc by class (1,009 Points, 23 Rectangles)" \
            "$TT_DIR/sqalloc-class.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc by class"; fi

    if tt_run_pid -- AllocCount -- sqalloc -m -c Point; then
        tt_expect "tools/sqalloc -m -c Point (which methods made the Points)" \
            "$TT_DIR/sqalloc-method-point.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc -m -c Point"; fi

    # the family's spellings: -b -C CLASS (the old -m -c CLASS above still works)
    if tt_run_pid -- AllocCount -- sqalloc -b -C Point; then
        tt_expect "tools/sqalloc -b -C Point (the same, new spelling)" \
            "$TT_DIR/sqalloc-method-point.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc -b -C Point"; fi

    # --callers 2: the allocating frame and its caller, counted exactly in the kernel
    if tt_run_pid -- AllocCount -- sqalloc -C Point --callers 2; then
        tt_expect "tools/sqalloc -C Point --callers 2 (exact counts by caller chain)" \
            "$TT_DIR/sqalloc-callers.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc --callers 2"; fi

    # --skip-class-side: past Point class>>x:y:, to the method that asked for the Point
    if tt_run_pid -- AllocCount -- sqalloc -C Point --callers 1 --skip-class-side -n 1; then
        tt_expect "tools/sqalloc --callers 1 --skip-class-side -n 1 (the constructor's caller)" \
            "$TT_DIR/sqalloc-skip.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc --skip-class-side"; fi

    if tt_run_pid -- AllocCount -- sqalloc -m -C 2 -S 1; then
        tt_expect "tools/sqalloc -m -C 2 -S 1 (top tables)" \
            "$TT_DIR/sqalloc-top.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqalloc -m -C 2 -S 1"; fi

    if ! tt_have_jq "tools/sqalloc -j"; then :
    elif tt_run_pid -- AllocCount -- sqalloc -j; then
        local got
        got=$(jq -c '[.by, .estimate, (.rows | map([.class, .count, .bytes])), .total.count, .lost]' "$TT_TMP/out" 2>&1)
        if [ "$TT_STATUS" = 0 ] && [ "$got" = '["class",false,[["Point",1009,24216],["Rectangle",23,552]],1032,0]' ]; then
            pass "tools/sqalloc -j (JSON parses, exact counts)"
        else fail "tools/sqalloc -j" "status $TT_STATUS, jq: $got; output: $(head -3 "$TT_TMP/out")"; fi
    else tt_failed_start "tools/sqalloc -j"; fi

    # Sampling: one sample per ~4 KiB over 11 MB (~2,800 samples, a few % of error);
    # the VM's sampler is seeded, so this is reproducible, and 10% is a wide margin.
    if ! tt_have_jq "tools/sqalloc --sample"; then :
    elif tt_run_pid --alloc-sample 4K -- AllocMany -- sqalloc --sample -j; then
        local verdict
        verdict=$(jq -r '
            def near(n): (. - n) / n | fabs < 0.10;
            (.rows | map({(.class): .count}) | add) as $c |
            if .estimate and ($c.Point | near(300007)) and ($c.Array | near(50021))
            then "ok Point \($c.Point) Array \($c.Array)" else "off Point \($c.Point) Array \($c.Array)" end' \
            "$TT_TMP/out" 2>&1)
        if [ "$TT_STATUS" = 0 ] && [[ "$verdict" == ok* ]]; then
            pass "tools/sqalloc --sample estimate within 10% ($verdict, exact 300007/50021)"
        else fail "tools/sqalloc --sample" "status $TT_STATUS, $verdict; $(head -3 "$TT_TMP/out")"; fi
    else tt_failed_start "tools/sqalloc --sample"; fi
}

# ---- Event batches: the flush rules -------------------------------------------

# The count a tool reported for BatchFlush's Points: sqalloc -C Point's total line,
# sqcalls -M point's row.
tt_batch_count() { # tool file
    if [ "$1" = sqalloc ]; then awk '/^[0-9]+ objects,/ { print $1 }' "$2"
    else awk '$1 == "BatchFlush>>point:" { print $2 }' "$2"; fi
}

# Three tools in turn on one VM (tests/tools/BatchFlush.som), each count exact: the first
# attached from the start and detached while the VM spins with a partial batch (the
# ticker flushes it: within about 130 ms once it has backed off, 500 ms are allowed),
# the second attached mid-phase and detached once the VM sleeps (flushed before the
# sleep), the third attached while it sleeps and ended by the VM's exit (flushed before
# vm__exit). The ticker is a timer signal, not a thread: the VM has one thread while
# the first is attached (a second would put glibc on its multi-threaded path for good).
tt_batches() {
    local tool s1 s2 a b c args threads
    for tool in sqalloc sqcalls; do
        if [ $tool = sqalloc ]; then args=(-C Point); else args=(-M point); fi
        s1="$TT_TMP/step1.$RANDOM"; s2="$TT_TMP/step2.$RANDOM"
        rm -f "$s1" "$s2"
        tt_start_vm -- "$TT_DIR/BatchFlush.som" "$s1" "$s2"
        tt_start_tool "$TT_TMP/b1" "$TT_TMP/b1.err" $tool "${args[@]}" -p "$TT_VM_PID"
        tt_wait_attached "$TT_TMP/b1" "$TT_TMP/b1.err" || { tt_failed_start "tools/$tool batches"; touch "$s1" "$s2"; tt_end_vm; continue; }
        tt_go
        wait_line "$TT_TMP/vm.out" /dev/null '^first' "$TT_VM_PID"
        sleep 0.5
        threads=$(ls "/proc/$TT_VM_PID/task" | wc -l)
        kill -INT "$TT_TOOL_PID"; tt_wait_tool
        a=$(tt_batch_count $tool "$TT_TMP/b1")
        tt_start_tool "$TT_TMP/b2" "$TT_TMP/b2.err" $tool "${args[@]}" -p "$TT_VM_PID"
        tt_wait_attached "$TT_TMP/b2" "$TT_TMP/b2.err"
        touch "$s1"
        wait_line "$TT_TMP/vm.out" /dev/null '^second' "$TT_VM_PID"
        tt_wait_vm_waiting "$TT_VM_PID"
        kill -INT "$TT_TOOL_PID"; tt_wait_tool
        b=$(tt_batch_count $tool "$TT_TMP/b2")
        tt_start_tool "$TT_TMP/b3" "$TT_TMP/b3.err" $tool "${args[@]}" -p "$TT_VM_PID"
        tt_wait_attached "$TT_TMP/b3" "$TT_TMP/b3.err"
        touch "$s2"
        tt_end_vm
        tt_wait_tool
        c=$(tt_batch_count $tool "$TT_TMP/b3")
        if [ "$a $b $c $threads" = "77 50 30 1" ]; then
            pass "tools/$tool batches: a busy VM's partial batch, detach, attach mid-phase, idle and exit flushes (77 50 30), one VM thread"
        else fail "tools/$tool batches" "counts '$a $b $c' and $threads VM threads, want '77 50 30' and 1; $(head -3 "$TT_TMP/b1.err" "$TT_TMP/b2.err" "$TT_TMP/b3.err")"; fi
    done
}

# ---- sqgc ----------------------------------------------------------------------

# Sum of a histogram's counts: the lines after the header line matching $2, up to a
# line that is not a histogram row.
tt_hist_sum() { # file title-regex
    awk -v title="$2" '
        $0 ~ title { inside = 1; next }
        inside && /->/ { split($0, a, ":"); split(a[2], b, " "); sum += b[1]; next }
        inside && /usecs|msecs/ { next }
        inside { inside = 0 }
        END { print sum + 0 }' "$1"
}

tt_sqgc() {
    # 7 full and 23 young collections, and no others (--young 1G)
    if tt_run_pid --young 1G -- GcCount -- sqgc; then
        local young full
        young=$(tt_hist_sum "$TT_TMP/out" '^young')
        full=$(tt_hist_sum "$TT_TMP/out" '^full')
        if [ "$TT_STATUS" = 0 ] && [ "$young" = 23 ] && [ "$full" = 7 ] &&
            grep -q '^young (incremental) collections: 23, total ' "$TT_TMP/out" &&
            grep -q '^full collections: 7, total ' "$TT_TMP/out" &&
            grep -qx 'young 23' "$TT_TMP/vm.out"; then
            pass "tools/sqgc histograms (23 young, 7 full)"
        else fail "tools/sqgc histograms" "status $TT_STATUS, young $young, full $full
$(cat "$TT_TMP/out")"; fi
    else tt_failed_start "tools/sqgc"; fi

    if tt_run_pid --young 1G -- GcCount -- sqgc -e; then
        awk '$3 == "young" || $3 == "full" { print $3, $4 }' "$TT_TMP/out" >"$TT_TMP/events"
        tt_expect "tools/sqgc -e (one line per collection, in order)" \
            "$TT_DIR/sqgc-events.expected" "$TT_TMP/events" "$TT_VM_PID"
    else tt_failed_start "tools/sqgc -e"; fi

    # -M filters in BPF: nothing pauses a whole second
    if tt_run_pid --young 1G -- GcCount -- sqgc -M 1s; then
        tt_expect "tools/sqgc -M 1s (filtered in the kernel, counted)" \
            "$TT_DIR/sqgc-min.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqgc -M"; fi
    if tt_run_pid --young 1G -- GcCount -- sqgc --min 1s; then
        tt_expect "tools/sqgc --min 1s (filtered in the kernel, counted)" \
            "$TT_DIR/sqgc-min.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqgc --min"; fi

    if ! tt_have_jq "tools/sqgc -j -e -m"; then :
    elif tt_run_pid --young 1G -- GcCount -- sqgc -j -e -m; then
        local got
        # begin_ns comes from the begin probe, paired per thread and kind with the end
        got=$(jq -sc '[(map(select(.type == "gc")) | length),
                       (map(select(.type == "gc" and .kind == "full")) | map(.seq)),
                       (map(select(.type == "gc")) | all(.begin_seen and .begin_ns < .end_ns and .end_ns - .begin_ns < 1000000000)),
                       (map(select(.type == "summary"))[0] | [.unit, .young.count, .full.count,
                        (.young.hist | map(.count) | add), .lost])]' "$TT_TMP/out" 2>&1)
        if [ "$TT_STATUS" = 0 ] && [ "$got" = '[30,[1,2,3,4,5,6,7],true,["ms",23,7,23,0]]' ]; then
            pass "tools/sqgc -j -e -m (JSON parses, exact counts)"
        else fail "tools/sqgc -j -e -m" "status $TT_STATUS, jq: $got"; fi
    else tt_failed_start "tools/sqgc -j"; fi

    # Interval and count: three reports of a VM that does nothing, then exit 0 by itself.
    tt_start_vm -- "$TT_DIR/GcCount.som"
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqgc -T -p "$TT_VM_PID" 0.1 3
    tt_wait_tool
    tt_end_vm
    local reports stamps
    reports=$(grep -c '^young (incremental) collections: 0$' "$TT_TMP/out")
    stamps=$(grep -cE '^[0-9]{2}:[0-9]{2}:[0-9]{2}$' "$TT_TMP/out")
    if [ "$TT_STATUS" = 0 ] && [ "$reports" = 3 ] && [ "$stamps" = 3 ]; then
        pass "tools/sqgc -T interval count (3 reports, then exit)"
    else fail "tools/sqgc interval count" "status $TT_STATUS, $reports reports, $stamps stamps: $(cat "$TT_TMP/out" "$TT_TMP/err")"; fi
}

# ---- sqsched (its other cases: tests/family.sh) ---------------------------------

# SchedLock: holder and waiter take a Lock in turns 7 times (7 blocked waits in
# Lock>>grab, each ended by holder's signal 20 ms later), then sleeper's 5 ms Delay
# ends while computer computes for 50 ms without yielding. Lower bounds only, each
# several ms under what the program guarantees, and each far above what it would be
# with the feature broken (0, or a few us).
tt_sqsched() {
    local got
    tt_have_jq "tools/sqsched -j" || return
    if tt_run_pid -- SchedLock -- sqsched -j; then
        got=$(jq -r '(.processes | map({(.name): .}) | add) as $p |
            (.semaphores | map(select(.method == "Lock>>grab"))) as $g |
            ([keys_unsorted[]] | join(",")),
            ($g | length),
            ($g[0] | "\(.waits) \(.waiter) \(.waiter_id == $p.waiter.id) \(.signaller) \(.signaller_id == $p.holder.id) \(.wait_ns >= 7 * 15000000) \(.max_ns >= 15000000) \(.max_ns <= .wait_ns)"),
            ([.semaphores[] | .method] | sort | join(" ")),
            "\($p.sleeper.delay_overshoots) \($p.sleeper.delay_overshoot_ns >= 40000000) \($p.sleeper.delay_overshoot_ns == $p.sleeper.delay_overshoot_max_ns) \($p.computer.max_run_ns >= 45000000) \($p.holder.delay_overshoots)"' \
            "$TT_TMP/out" 2>&1 | tr '\n' ';')
        if [ "$TT_STATUS" = 0 ] && [ "$got" = "type,time,unit,processes,semaphores,lost;1;7 waiter true holder true true true true;Lock>>await Lock>>grab Lock>>hold SchedLock>>run:;1 true true true 7;" ]; then
            pass "tools/sqsched -j: 7 waits in Lock>>grab, waiter waited, holder signalled; a 5 ms Delay 40+ ms late behind a 45+ ms run"
        else fail "tools/sqsched -j (semaphores, max_run_ns, delay_overshoot_ns)" "status $TT_STATUS: '$got' $(head -3 "$TT_TMP/err")"; fi
    else tt_failed_start "tools/sqsched -j"; fi

    # the text: the Semaphores table (IDs are the VM's serials: main 1, holder 2, waiter 3),
    # and -P's longest run column
    if tt_run_pid -- SchedLock -- sqsched -P; then
        got=$(awk -v pid="$TT_VM_PID" '
            /^Semaphores: / { t = 1; next }
            t && /^PID +SEMAPHORE +WAITS +WAIT_ms +MAX_ms +METHOD +WAITER +SIGNALLER$/ { h = 1; next }
            t && $1 == pid && $6 == "Lock>>grab" { g = $3 " " $7 " " $8 " " $9 " " $10 }
            !t && $1 == pid && $3 == "computer" && NF == 14 { c = ($13 >= 45) }
            /RUN_MAXms +DLY_LATEms$/ { r = 1 }
            END { print h + 0, r + 0, c + 0, g }' "$TT_TMP/out")
        if [ "$TT_STATUS" = 0 ] && [ "$got" = "1 1 1 7 waiter (3) holder (2)" ]; then
            pass "tools/sqsched -P: the Semaphores table names Lock>>grab, waiter (3) and holder (2); RUN_MAXms of computer 45+"
        else fail "tools/sqsched -P (Semaphores table, RUN_MAXms)" "status $TT_STATUS: '$got' $(head -20 "$TT_TMP/out")"; fi
    else tt_failed_start "tools/sqsched -P"; fi

    # a process that never yields: the report comes while its one run (1.5 s) goes on
    if tt_run_pid -- SchedSpin -- sqsched -j -d 0.6; then
        got=$(jq -r '.processes[] | select(.name == "spinner") | "\(.activations) \(.max_run_ns >= 400000000) \(.max_run_ns < 1500000000)"' "$TT_TMP/out" 2>&1)
        if [ "$TT_STATUS" = 0 ] && [ "$got" = "1 true true" ]; then
            pass "tools/sqsched -j -d 0.6: the run in progress of a process that never yields is its max_run_ns (0.4 s or more)"
        else fail "tools/sqsched -j, a run in progress" "status $TT_STATUS: '$got' $(head -3 "$TT_TMP/err")"; fi
    else tt_failed_start "tools/sqsched -j -d 0.6"; fi
}

# ---- sqflow --------------------------------------------------------------------

tt_sqflow() {
    if tt_run_pid -- FlowTree -- sqflow; then
        tt_expect "tools/sqflow -p (exact indented flow)" \
            "$TT_DIR/sqflow-pid.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqflow -p"; fi

    if tt_run_pid -- FlowTree -- sqflow --no-blocks -D 4 -M b; then
        tt_expect "tools/sqflow --no-blocks -D 4 -M b (filters in the kernel)" \
            "$TT_DIR/sqflow-filtered.expected" "$TT_TMP/out" "$TT_VM_PID"
    else tt_failed_start "tools/sqflow filters"; fi

    # System-wide: attached to the binary before the VM starts, it sees the VM from its
    # first call; -C keeps the workload's classes (receiver or defining class).
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqflow --vm "$TT_TMP/sqvm" -C Flow
    if tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"; then
        "$TT_TMP/sqvm" "$TT_DIR/FlowTree.som" >/dev/null 2>&1 &
        local vm=$!
        wait "$vm"
        kill -INT "$TT_TOOL_PID"
        tt_wait_tool
        # run:'s entry is seen (with -p it cannot be); from it to its return, with the
        # indentation of the VM's start-up (the core library's business) taken off
        awk '/^[0-9]+ +[0-9]+ +-> FlowTree>>run:$/ { on = 1; match(substr($0, 17), /^ */); cut = RLENGTH }
            on { print substr($0, 1, 16) substr($0, 17 + cut) }
            /^[0-9]+ +[0-9]+ +<- FlowTree>>run:/ { on = 0 }' "$TT_TMP/out" >"$TT_TMP/flow"
        tt_expect "tools/sqflow system-wide (a VM started after the tool, Ctrl-C)" \
            "$TT_DIR/sqflow-systemwide.expected" "$TT_TMP/flow" "$vm"
    else tt_wait_tool; tt_failed_start "tools/sqflow system-wide"; fi

    if ! tt_have_jq "tools/sqflow --format=chrome"; then :
    elif tt_run_pid -- FlowTree -- sqflow --format=chrome; then
        local got
        got=$(jq -c '[(.traceEvents | map(select(.ph == "X")) | length),
                      (.traceEvents | map(select(.name == "FlowTree>>leaf")) | length),
                      (.traceEvents | map(select(.name == "FlowTree(FlowBase)>>describe" and .dur > 0)) | length),
                      (.traceEvents | map(select(.args.began_before_trace)) | map(.name + "@" + (.ts | tostring)) | join(" ")),
                      .otherData.lost_events]' "$TT_TMP/out" 2>&1)
        # 12 calls enter and return while traced, 4 of them leaf; waitFor:, run: and
        # initialize: were entered before the tool attached: slices from ts 0
        if [ "$TT_STATUS" = 0 ] && [ "$got" = '[15,4,1,"FlowTree>>waitFor:@0 FlowTree>>run:@0 System>>initialize:@0","0"]' ]; then
            pass "tools/sqflow --format=chrome (trace-event JSON parses)"
        else fail "tools/sqflow --format=chrome" "status $TT_STATUS, jq: $got"; fi
    else tt_failed_start "tools/sqflow --format=chrome"; fi

    # Calls still running when tracing stops are written, marked unfinished: the VM,
    # seen from its start, sits in run: -> waitFor: when the tool gets SIGINT.
    if ! tt_have_jq "tools/sqflow --format=chrome unfinished calls"; then :
    elif tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqflow --vm "$TT_TMP/sqvm" -C FlowTree --format=chrome &&
        tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"; then
        tt_start_vm -- "$TT_DIR/FlowTree.som"
        kill -INT "$TT_TOOL_PID"
        tt_wait_tool
        tt_end_vm
        local got
        got=$(jq -c '.traceEvents | map(select(.args.unfinished) | .name)' "$TT_TMP/out" 2>&1)
        if [ "$TT_STATUS" = 0 ] && [ "$got" = '["FlowTree>>waitFor:","FlowTree>>run:"]' ]; then
            pass "tools/sqflow --format=chrome writes unfinished calls at Ctrl-C"
        else fail "tools/sqflow --format=chrome unfinished calls" "status $TT_STATUS, jq: $got"; fi
    else tt_wait_tool; tt_failed_start "tools/sqflow --format=chrome unfinished"; fi

    # Lost events: a 4 KiB ring buffer holds 17 events; the tool is stopped while the
    # VM sends 20,014, so most are dropped, and shown + lost must still add up.
    tt_start_vm -- "$TT_DIR/FlowMany.som"
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqflow --buffer 4K -M leaf -p "$TT_VM_PID"
    if tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"; then
        local tool
        tool=$(pgrep -P "$TT_TOOL_PID" sqflow)
        kill -STOP "$tool"
        tt_go
        tt_end_vm
        kill -CONT "$tool"
        tt_wait_tool
        local shown lost
        shown=$(grep -cE ' (->|<-) FlowMany>>leaf' "$TT_TMP/out")
        lost=$(sed -n 's/^Lost \([0-9]*\) events.*/\1/p' "$TT_TMP/out")
        if [ "$TT_STATUS" = 0 ] && [ -n "$lost" ] && [ "$lost" -gt 0 ] && [ $((shown + lost)) = 20014 ]; then
            pass "tools/sqflow lost events counted ($shown shown + $lost lost = 20014)"
        else fail "tools/sqflow lost events" "status $TT_STATUS, shown $shown, lost '$lost': $(tail -3 "$TT_TMP/out")"; fi
    else tt_end_vm; tt_wait_tool; tt_failed_start "tools/sqflow lost events"; fi
}

# ---- containers ----------------------------------------------------------------

# A chroot holding a copy of the VM, its libraries and the AllocCount workload: a process
# in it runs a binary the host knows by another path, reached through /proc/PID/root.
tt_make_chroot() { # dir
    local lib
    mkdir -p "$1/w" || return 1
    cp "$TT_TMP/sqvm" "$1/sqvm" || return 1
    for lib in $(ldd "$TT_TMP/sqvm" | grep -o '/[^ ]*'); do
        mkdir -p "$1$(dirname "$lib")" && cp "$lib" "$1$lib" || return 1
    done
    cp "$TT_DIR/AllocCount.som" "$TT_DIR/Point.som" "$TT_DIR/Rectangle.som" "$1/w/"
}

tt_containers() {
    local root="$TT_TMP/root" vm
    if ! command -v chroot >/dev/null || ! tt_make_chroot "$root" 2>/dev/null; then
        skip "tools/containers" "cannot build a chroot (chroot, ldd)"
        return
    fi
    # -p: the binary is found through /proc/PID/root
    rm -f "$root/go"
    chroot "$root" /sqvm /w/AllocCount.som /go >/dev/null 2>&1 </dev/null &
    vm=$!
    tt_wait_vm_waiting "$vm"
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqalloc -c Point -p "$vm"
    tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"
    touch "$root/go"
    wait "$vm"
    tt_wait_tool
    if [ "$TT_STATUS" = 0 ] && grep -qE '^Point +1009 +24216$' "$TT_TMP/out"; then
        pass "tools/sqalloc -p of a VM in a chroot"
    else fail "tools/sqalloc -p of a VM in a chroot" "status $TT_STATUS: $(cat "$TT_TMP/out" "$TT_TMP/err")"; fi

    # system-wide, "sqvm" from PATH: the VM in the chroot, already running, is found by
    # scanning /proc, and its binary (another file of the same name) is traced too
    rm -f "$root/go"
    chroot "$root" /sqvm /w/AllocCount.som /go >/dev/null 2>&1 </dev/null &
    vm=$!
    tt_wait_vm_waiting "$vm"
    PATH="$TT_TMP:$PATH" tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqalloc -v -C Point
    tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"
    touch "$root/go"
    wait "$vm"
    kill -INT "$TT_TOOL_PID"
    tt_wait_tool
    if [ "$TT_STATUS" = 0 ] && grep -qE '^Point +1009 +24216$' "$TT_TMP/out" &&
        grep -q "in 2 binaries" "$TT_TMP/err"; then
        pass "tools/sqalloc system-wide finds a VM in a chroot"
    else fail "tools/sqalloc system-wide finds a VM in a chroot" "status $TT_STATUS: $(cat "$TT_TMP/out"; grep -v '^libbpf' "$TT_TMP/err")"; fi

    # --vm PATH is that file only: the chroot's sqvm, another file, is not traced
    rm -f "$root/go"
    chroot "$root" /sqvm /w/AllocCount.som /go >/dev/null 2>&1 </dev/null &
    vm=$!
    tt_wait_vm_waiting "$vm"
    tt_start_tool "$TT_TMP/out" "$TT_TMP/err" sqalloc -v -C Point --vm "$TT_TMP/sqvm"
    tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"
    touch "$root/go"
    wait "$vm"
    kill -INT "$TT_TOOL_PID"
    tt_wait_tool
    if [ "$TT_STATUS" = 0 ] && grep -q '^0 objects, 0 bytes in 0 classes$' "$TT_TMP/out" &&
        grep -q "in 1 binary," "$TT_TMP/err"; then
        pass "tools/sqalloc --vm PATH traces that file only, not one of the same name in a chroot"
    else fail "tools/sqalloc --vm PATH traces that file only" "status $TT_STATUS: $(cat "$TT_TMP/out"; grep -v '^libbpf' "$TT_TMP/err")"; fi
}

# ---- what every tool does ------------------------------------------------------

tt_common() {
    local tool out status dead

    for tool in sqalloc sqgc sqflow; do
        out=$("$TT_TOOLS/$tool" --help 2>&1); status=$?
        if [ "$status" = 0 ] && [[ "$out" == *USAGE:* ]] && [[ "$out" == *EXAMPLES:* ]]; then pass "tools/$tool --help"
        else fail "tools/$tool --help" "status $status: $out"; fi
        out=$("$TT_TOOLS/$tool" --version 2>&1); status=$?
        if [ "$status" = 0 ] && [ "$out" = "$tool (sqvm tools) 0.1.0" ]; then pass "tools/$tool --version"
        else fail "tools/$tool --version" "status $status: $out"; fi
        out=$("$TT_TOOLS/$tool" --frobnicate 2>&1); status=$?
        if [ "$status" = 2 ] && [[ "$out" == *"unrecognized option"* ]]; then pass "tools/$tool bad option (status 2)"
        else fail "tools/$tool bad option" "status $status: $out"; fi
    done

    # Errors: a dead PID, a process that is not a VM, VMs without probes, no privileges.
    true & dead=$!
    wait "$dead"
    tt_error_case "dead PID" "sqalloc: PID $dead does not exist" sqalloc -p "$dead"
    tt_error_case "not a VM" "sqgc: PID $$ ($(readlink /proc/$$/exe)) is not a sqvm process: its executable has no squeak USDT probes" sqgc -p "$$"
    objcopy --remove-section=.note.stapsdt "$TT_TMP/sqvm" "$TT_TMP/noprobes/sqvm"
    tt_error_case "VM without probes (--vm)" "sqflow: $TT_TMP/noprobes/sqvm is sqvm built without probes: its executable has no .note.stapsdt squeak notes (rebuild it with probes: make, not make PROBES=0)" sqflow --vm "$TT_TMP/noprobes/sqvm"
    if [ -x build/noprobes/sqvm ]; then
        cp build/noprobes/sqvm "$TT_TMP/noprobes/sqvm-p0"
        "$TT_TMP/noprobes/sqvm-p0" -e 'system sleepMillis: 30000' >/dev/null 2>&1 </dev/null &
        local np=$!
        until [ "$(readlink "/proc/$np/exe")" = "$TT_TMP/noprobes/sqvm-p0" ]; do kill -0 "$np" 2>/dev/null || break; sleep 0.01; done
        tt_error_case "VM built with PROBES=0 (-p)" "sqgc: PID $np ($TT_TMP/noprobes/sqvm-p0) is sqvm built without probes: its executable has no .note.stapsdt squeak notes (rebuild it with probes: make, not make PROBES=0)" sqgc -p "$np"
        kill "$np"; wait "$np" 2>/dev/null
    else
        skip "tools/VM built with PROBES=0" "no build/noprobes/sqvm (make PROBES=0)"
    fi
    if command -v setpriv >/dev/null; then
        # nobody cannot reach $TMP (mode 700): a copy of the tool in a folder it can
        local public
        public=$(mktemp -d /tmp/sqtools-test.XXXXXX)
        cp "$TT_TOOLS/sqgc" "$public/sqgc"
        chmod 755 "$public" "$public/sqgc"
        out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$public/sqgc" -p 1 2>&1); status=$?
        rm -rf "$public"
        if [ "$status" = 1 ] && [ "$out" = "sqgc: needs root, or the capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), to load BPF programs and attach uprobes" ]; then
            pass "tools/error: not root"
        else fail "tools/error: not root" "status $status: $out"; fi
    else
        skip "tools/error: not root" "no setpriv"
    fi

    # Start-up: attached well under 0.3 s (reported by -v; only a gross regression fails,
    # as a loaded machine can be slow).
    local times="" ms
    for tool in sqalloc sqgc sqflow; do
        tt_start_vm -- "$TT_DIR/GcCount.som"
        tt_start_tool "$TT_TMP/out" "$TT_TMP/err" "$tool" -v -p "$TT_VM_PID"
        tt_wait_attached "$TT_TMP/out" "$TT_TMP/err"
        tt_end_vm
        tt_wait_tool
        ms=$(sed -n 's/.* attached [0-9]* probe sites in .*, \([0-9.]*\) ms after start$/\1/p' "$TT_TMP/err")
        if [ -n "$ms" ] && awk -v ms="$ms" 'BEGIN { exit !(ms < 1000) }'; then times="$times $tool ${ms}ms"
        else fail "tools/$tool start-up" "status $TT_STATUS, '$ms': $(grep -v '^libbpf' "$TT_TMP/err" | head -5)"; fi
    done
    [ -n "$times" ] && pass "tools/start-up to attached:$times"
}

# ---- the build: a header edit rebuilds what includes it ---------------------------

# The tools whose BPF object (or skeleton) `make -n` would rebuild if HEADER had just been
# touched (-W: as if it were, without touching it). what: the compile or the skeleton.
tt_rebuilt() { # what header
    local pattern
    case "$1" in
        object) pattern='s|.* -c bpf/\([a-z]*\)\.bpf\.c .*|\1|p' ;;
        skeleton) pattern='s|.* gen skeleton [^ ]*/\([a-z]*\)\.bpf\.o .*|\1|p' ;;
    esac
    make -n -W "$2" tools 2>/dev/null | sed -n "$pattern" | sort -u | tr "\n" " " | sed "s/ $//"
}

# The BPF programs that include HEADER, directly or through other bpf/ and probes/
# headers: read from the sources' #include lines, not from make's .d files.
tt_includers() { # header
    local set changed=1 h
    set=$(basename "$1")
    while [ "$changed" = 1 ]; do
        changed=0
        for h in bpf/*.h probes/*.h; do
            case " $set " in *" $(basename "$h") "*) continue ;; esac
            if grep -qE "^#include \"($(tr ' ' '|' <<<"$set"))\"" "$h"; then
                set="$set $(basename "$h")"
                changed=1
            fi
        done
    done
    for h in bpf/*.bpf.c; do
        grep -qE "^#include \"($(tr ' ' '|' <<<"$set"))\"" "$h" && basename "$h" .bpf.c
    done | sort | tr "\n" " " | sed "s/ $//"
}

tt_build_deps() {
    local header want obj skel
    for header in bpf/sqalloc.h probes/debug_offsets.h; do
        want=$(tt_includers "$header")
        obj=$(tt_rebuilt object "$header")
        skel=$(tt_rebuilt skeleton "$header")
        if [ -n "$want" ] && [ "$obj" = "$want" ] && [ "$skel" = "$want" ]; then
            pass "tools/build: after touching $header, make rebuilds the BPF objects and skeletons of: $want"
        else
            fail "tools/build: after touching $header" "the BPF programs that include it: '$want'
make -n would compile: '$obj'
and generate the skeletons of: '$skel'"
        fi
    done
}

tt_error_case() { # label expected-stderr tool args...
    local label=$1 want=$2 out status
    shift 2
    out=$(timeout 20 "$TT_TOOLS/$@" 2>&1 </dev/null); status=$?
    if [ "$status" = 1 ] && [ "$out" = "$want" ]; then pass "tools/error: $label"
    else fail "tools/error: $label" "status $status (want 1): $out
want: $want"; fi
}

tt_tier() {
    if [ "$(id -u)" != 0 ]; then
        skip "tools" "needs root (BPF programs and uprobes)"
        return
    fi
    if [ ! -r /sys/kernel/btf/vmlinux ] || [ ! -e /sys/bus/event_source/devices/uprobe ]; then
        skip "tools" "the kernel lacks BTF or uprobes"
        return
    fi
    if ! readelf -n "$VM" 2>/dev/null | grep -q 'Provider: squeak'; then
        skip "tools" "$VM has no squeak probes"
        return
    fi
    if ! make -s tools >"$TMP/tools-build" 2>&1; then
        fail "tools/build" "$(tail -20 "$TMP/tools-build")"
        return
    fi
    pass "tools/build (make tools)"
    tt_build_deps
    mkdir -p "$TT_TMP/noprobes"
    cp "$VM" "$TT_TMP/sqvm"
    tt_sqalloc
    tt_batches
    tt_sqgc
    tt_sqflow
    tt_sqsched
    tt_containers
    tt_common
}

tt_tier
