# SPDX-License-Identifier: BSD-2-Clause
# tests/attach.sh - the production case: every tool attached to a VM that is already
# busy (deep in a known call chain, green processes handing a token back and forth,
# collections all the time: tests/attach/Busy.som), a second or more after it started;
# and VMs that start, or exit, while a tool traces. Sourced by tests/run.sh (uses its
# pass/fail/skip, $VM and $TMP). Needs root (BPF, uprobes, ptrace).
#
# Like tests/tools.sh, each case runs a private copy of the VM binary, so that nobody
# else's tracing of build/sqvm is seen or slows these down.

AT_TOOLS=build/tools
AT_DIR=tests/attach
AT_TMP="$TMP/attach"
AT_TIMEOUT=60

# Starts Busy.som in the background: AT_BUSY (pid), AT_STOP (its stop file).
at_start_busy() {
    AT_STOP="$AT_TMP/stop.$RANDOM$RANDOM"
    rm -f "$AT_STOP"
    "$AT_TMP/sqvm" -cp "$AT_DIR" "$AT_DIR/Busy.som" "$AT_STOP" >"$AT_TMP/busy.out" 2>&1 </dev/null &
    AT_BUSY=$!
    wait_exec "$AT_BUSY"
}

at_stop_busy() {
    touch "$AT_STOP"
    wait "$AT_BUSY" 2>/dev/null
    AT_BUSY_STATUS=$?
}

# Runs a tool to completion under a timeout: output in $AT_TMP/out, $AT_TMP/err; AT_STATUS.
at_tool() { # tool args...
    timeout -s KILL "$AT_TIMEOUT" "$AT_TOOLS/$@" >"$AT_TMP/out" 2>"$AT_TMP/err" </dev/null
    AT_STATUS=$?
}

# Starts a tool in the background and waits for its "Tracing" line; AT_TOOL (pid).
at_start_tool() { # out err tool args...
    local out=$1 err=$2 tool=$3
    shift 3
    start_bg "$out" "$err" "$AT_TIMEOUT" "$AT_TOOLS/$tool" "$@"
    AT_TOOL=$BG_PID
    wait_line "$out" "$err" '^Tracing ' "$AT_TOOL"
}

at_wait_tool() {
    wait "$AT_TOOL"
    AT_STATUS=$?
}

# ---- sqflow: the true depth from the first event, Chrome times within the trace ----

at_sqflow() {
    local depths want=6 t0 t1 got
    # From the VM's start (system-wide, attached before it runs): marker: is 6 deep
    # (System>>initialize: run: level1 level2 level3 level4 marker:, from 0).
    at_start_tool "$AT_TMP/sw" "$AT_TMP/sw.err" sqflow --vm "$AT_TMP/sqvm" -M marker: --no-blocks -j
    at_start_busy
    sleep 1
    at_stop_busy
    kill -INT "$AT_TOOL"
    at_wait_tool
    depths=$(jq -r 'select(.name == "Busy>>marker:") | .depth' "$AT_TMP/sw" 2>/dev/null | sort -u | tr '\n' ' ')
    if [ "$AT_STATUS" = 0 ] && [ "$depths" = "$want " ]; then
        pass "attach/sqflow from the VM's start: marker: at depth $want"
    else fail "attach/sqflow from the VM's start" "status $AT_STATUS, depths '$depths': $(head -3 "$AT_TMP/sw.err")"; fi

    # Attached to the busy VM a second after it started: the same depth, from the first
    # event on (entries and returns alike).
    at_start_busy
    sleep 1.5
    at_tool sqflow -p "$AT_BUSY" -M marker: --no-blocks -j 1 1
    depths=$(jq -r 'select(.name == "Busy>>marker:") | .depth' "$AT_TMP/out" 2>/dev/null | sort -u | tr '\n' ' ')
    got=$(jq -r 'select(.name == "Busy>>marker:")' "$AT_TMP/out" 2>/dev/null | grep -c '"event"')
    if [ "$AT_STATUS" = 0 ] && [ "$depths" = "$want " ] && [ "$got" -gt 100 ]; then
        pass "attach/sqflow -p on a busy VM: marker: at depth $want in all $got events"
    else fail "attach/sqflow -p on a busy VM" "status $AT_STATUS, depths '$depths', $got events: $(head -3 "$AT_TMP/err")"; fi

    # -D 7 keeps marker: (depth 6); -D 6 leaves it out
    at_tool sqflow -p "$AT_BUSY" -M marker: -D 6 --no-blocks -j 0.5 1
    got=$(grep -c '"name":"Busy>>marker:"' "$AT_TMP/out")
    at_tool sqflow -p "$AT_BUSY" -M marker: -D 7 --no-blocks -j 0.5 1
    if [ "$got" = 0 ] && [ "$(grep -c '"name":"Busy>>marker:"' "$AT_TMP/out")" -gt 0 ]; then
        pass "attach/sqflow -D counts frames of the Smalltalk stack (-D 6 drops depth 6, -D 7 keeps it)"
    else fail "attach/sqflow -D" "-D 6 showed $got events; -D 7: $(head -2 "$AT_TMP/out")"; fi

    # Chrome: every slice starts at or after 0 and ends within the trace's length; each
    # green process is a track whose slices nest properly (entries and returns paired
    # per process, though the processes interleave on one thread); only calls under way
    # when tracing began are marked so: at most the frames above the never-returning
    # ones (run: .. level4, the workers' loops) of the three processes, 3 each.
    t0=$(date +%s%N)
    at_tool sqflow -p "$AT_BUSY" --format=chrome 1 1
    t1=$(date +%s%N)
    got=$(jq -r --argjson len "$(( (t1 - t0) / 1000 ))" '
        [.traceEvents[] | select(.ph == "X")] as $x |
        [($x | length),
         ($x | map(select(.ts < 0 or .ts + .dur > $len)) | length),
         ($x | map(select(.args.began_before_trace)) | length),
         ($x | map(select(.args.began_before_trace and (.name | test("^(Busy>>marker:|BusyPoint class>>x:y:|BusyPoint>>setX:y:|Semaphore>>.*|\\[\\] in Busy>>level4)$") | not))) | length)] | map(tostring) | join(" ")' "$AT_TMP/out" 2>&1)
    read -r n bad early stray <<<"$got"
    # proper nesting per track (green processes interleave on one thread)
    local unnested
    unnested=$(chrome_unnested "$AT_TMP/out")
    if [ "$AT_STATUS" = 0 ] && [ "${bad:-x}" = 0 ] && [ "${n:-0}" -gt 100 ] && [ "${early:-99}" -le 9 ] &&
        [ "${stray:-x}" = 0 ] && [ "$unnested" = 0 ]; then
        pass "attach/sqflow --format=chrome: $n slices within the trace, nested per green process; $early began before it"
    else fail "attach/sqflow --format=chrome" "status $AT_STATUS, slices/outside/early/stray: $got, badly nested: $unnested"; fi
    at_stop_busy
}

# ---- sqstack: consistent stacks only ----------------------------------------------

# A well-formed stack: every line "    at NAME (FILE.som:LINE)", the outermost frame the
# main process's System>>initialize: or a forked process's block.
at_stack_ok() { # file
    awk '!/^    at [^ ].* \([^ ()]+\.som:[0-9]+\)$/ { bad = 1 } { last = $0 }
         END { exit !(NR > 0 && !bad && (last ~ /at System>>initialize: / || last ~ /at \[\] in Busy>>level4 /)) }' "$1"
}

at_sqstack() {
    local mode malformed unread i st
    at_start_busy
    sleep 1
    for mode in "" --nonblocking; do
        malformed=0 unread=0
        for ((i = 0; i < 100; i++)); do
            "$AT_TOOLS/sqstack" -p "$AT_BUSY" $mode >"$AT_TMP/stack" 2>"$AT_TMP/stack.err"
            st=$?
            if [ "$st" = 0 ] && at_stack_ok "$AT_TMP/stack"; then :
            elif [ "$st" = 1 ] && [ ! -s "$AT_TMP/stack" ] && grep -q "no consistent stack" "$AT_TMP/stack.err"; then
                unread=$((unread + 1))
            else
                malformed=$((malformed + 1))
                cp "$AT_TMP/stack" "$AT_TMP/malformed"
            fi
        done
        # stopped, a read never fails; running, a few may be reported (never printed)
        if [ "$malformed" = 0 ] && { [ -n "$mode" ] || [ "$unread" = 0 ]; }; then
            pass "attach/sqstack ${mode:-(stopping the VM)}: 100 reads of a busy VM, 0 malformed, $unread reported unreadable"
        else fail "attach/sqstack ${mode:-(stopping the VM)}" "$malformed malformed, $unread unreadable; one: $(head -5 "$AT_TMP/malformed" 2>/dev/null)"; fi
    done
    at_stop_busy
    if [ "$AT_BUSY_STATUS" = 0 ]; then pass "attach/sqstack: the VM ran on, undisturbed by 200 reads"
    else fail "attach/sqstack: the VM survived" "status $AT_BUSY_STATUS: $(tail -5 "$AT_TMP/busy.out")"; fi
}

# ---- sqprof: the duration is the sampling time -------------------------------------

at_sqprof() {
    local secs t0 t1 mode
    at_start_busy
    sleep 1
    for mode in "" --alloc; do
        t0=$(date +%s%N)
        at_tool sqprof -p "$AT_BUSY" $mode -d 2 -j
        t1=$(date +%s%N)
        secs=$(jq -r '.seconds' "$AT_TMP/out" 2>/dev/null)
        if [ "$AT_STATUS" = 0 ] && awk -v s="$secs" -v w="$(( (t1 - t0) / 1000000 ))" \
            'BEGIN { exit !(s >= 1.8 && s <= 2.2 && w <= 3500) }'; then
            pass "attach/sqprof ${mode:-(CPU)} -d 2: sampled $secs s, done in $(( (t1 - t0) / 1000000 )) ms"
        else fail "attach/sqprof ${mode:-(CPU)} -d 2" "status $AT_STATUS, seconds '$secs', wall $(( (t1 - t0) / 1000000 )) ms: $(head -3 "$AT_TMP/err")"; fi
    done
    at_stop_busy
}

# ---- long names stay distinct --------------------------------------------------------

AT_ALPHA=AttachLongClassNameThatGoesOnAndOnPastSixtyFourBytesOfNameToTestTheToolsAlpha
AT_OMEGA=AttachLongClassNameThatGoesOnAndOnPastSixtyFourBytesOfNameToTestTheToolsOmega
AT_LONGSEL='aSelectorThatIsLongerThanTheSixtyFourBytesTheKernelSideCopiesOfEveryName:with:'

# Runs LongNames.som under a tool attached with -p; the VM exits while traced.
at_longnames() { # tool args...
    local go="$AT_TMP/go.$RANDOM" vm i
    rm -f "$go"
    "$AT_TMP/sqvm" -cp "$AT_DIR" "$AT_DIR/LongNames.som" "$go" >/dev/null 2>&1 </dev/null &
    vm=$!
    for ((i = 0; i < 500; i++)); do grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null && break; sleep 0.01; done
    at_start_tool "$AT_TMP/out" "$AT_TMP/err" "$@" -p "$vm"
    touch "$go"
    wait "$vm"
    at_wait_tool
}

at_names() {
    local got
    at_longnames sqalloc -j
    got=$(jq -r --arg a "$AT_ALPHA" --arg o "$AT_OMEGA" \
        '[(.rows[] | select(.class == $a) | .count), (.rows[] | select(.class == $o) | .count)] | map(tostring) | join(" ")' "$AT_TMP/out" 2>&1)
    if [ "$AT_STATUS" = 0 ] && [ "$got" = "1000 2000" ]; then
        pass "attach/sqalloc: two 77-byte class names that differ at the end: 1000 and 2000, apart"
    else fail "attach/sqalloc long class names" "status $AT_STATUS, counts '$got': $(head -c 600 "$AT_TMP/out")"; fi

    at_longnames sqalloc -C "$AT_OMEGA" -b -j
    got=$(jq -r '.rows | map("\(.method) \(.class) \(.count)") | join(";")' "$AT_TMP/out" 2>&1)
    if [ "$AT_STATUS" = 0 ] && [ "$got" = "$AT_OMEGA class>>make $AT_OMEGA 2000" ]; then
        pass "attach/sqalloc -C (a 77-byte name) -b: exactly its 2000, and its method named whole"
    else fail "attach/sqalloc -C long name -b" "status $AT_STATUS: '$got' $(head -3 "$AT_TMP/err")"; fi

    at_longnames sqflow -C "$AT_ALPHA" -j
    got=$(jq -r 'select(.event == "entry") | .name' "$AT_TMP/out" 2>/dev/null | sort | uniq -c | sed -E 's/^ *//' | tr '\n' ';')
    if [ "$AT_STATUS" = 0 ] && [ "$got" = "1000 $AT_ALPHA class>>make;" ]; then
        pass "attach/sqflow -C (a 77-byte prefix): the 1000 calls of that class only, named whole"
    else fail "attach/sqflow -C long prefix" "status $AT_STATUS: '$got'"; fi

    at_longnames sqflow -M "$AT_LONGSEL" -j
    got=$(jq -r 'select(.event) | "\(.event) \(.name)"' "$AT_TMP/out" 2>/dev/null | tr '\n' ';')
    if [ "$AT_STATUS" = 0 ] && [ "$got" = "entry LongNames>>$AT_LONGSEL;return LongNames>>$AT_LONGSEL;" ]; then
        pass "attach/sqflow -M (a 77-byte selector): its one call, named whole"
    else fail "attach/sqflow -M long selector" "status $AT_STATUS: '$got'"; fi
}

# ---- VMs that start or exit under a tool -----------------------------------------------

at_lifecycle() {
    local got vm
    # A VM starting while sqalloc --callers traces system-wide: its stack is walked from its
    # first allocation (it announces its offsets in vm__start).
    at_start_tool "$AT_TMP/sw" "$AT_TMP/sw.err" sqalloc --vm "$AT_TMP/sqvm" -C "$AT_OMEGA" --callers 2 -j
    touch "$AT_TMP/go.now"
    "$AT_TMP/sqvm" -cp "$AT_DIR" "$AT_DIR/LongNames.som" "$AT_TMP/go.now" >/dev/null 2>&1
    kill -INT "$AT_TOOL"
    at_wait_tool
    got=$(jq -r '.rows | map("\(.callers | join(" <- ")) \(.count)") | join(";")' "$AT_TMP/sw" 2>&1)
    if [ "$AT_STATUS" = 0 ] && [ "$got" = "$AT_OMEGA class>>make <- LongNames>>$AT_LONGSEL 2000" ]; then
        pass "attach/sqalloc --callers 2 system-wide: a VM started mid-trace, exact chain and count"
    else fail "attach/sqalloc --callers 2, VM started mid-trace" "status $AT_STATUS: '$got' $(head -3 "$AT_TMP/sw.err")"; fi

    # -d: every tool of the family traces for that long, reports and exits by itself: at
    # least the second, and well before the harness's timeout (how much longer attaching
    # and the report take is the machine's load: 2.5 s was once too little)
    local t0 t1 tool
    at_start_busy
    sleep 1
    for tool in sqalloc sqgc sqflow; do
        t0=$(date +%s%N)
        at_tool "$tool" -p "$AT_BUSY" -d 1 -j
        t1=$(date +%s%N)
        if [ "$AT_STATUS" = 0 ] && [ -s "$AT_TMP/out" ] && (( (t1 - t0) / 1000000 >= 1000 && (t1 - t0) / 1000000 < 20000 )); then
            pass "attach/$tool -d 1: reported and exited after $(( (t1 - t0) / 1000000 )) ms"
        else fail "attach/$tool -d 1" "status $AT_STATUS after $(( (t1 - t0) / 1000000 )) ms: $(head -3 "$AT_TMP/err")"; fi
    done
    at_stop_busy

    # Attached to a busy VM that then exits (the stop file): the tool prints its totals
    # and exits 0 by itself.
    at_start_busy
    sleep 1
    at_start_tool "$AT_TMP/out" "$AT_TMP/err" sqgc -p "$AT_BUSY"
    sleep 1
    at_stop_busy
    at_wait_tool
    if [ "$AT_STATUS" = 0 ] && grep -qE '^young \(incremental\) collections: [1-9][0-9]*' "$AT_TMP/out" &&
        grep -qE '^full collections: [1-9][0-9]*' "$AT_TMP/out"; then
        pass "attach/sqgc -p: the VM exits mid-trace, sqgc prints its histograms and exits 0"
    else fail "attach/sqgc -p, VM exits mid-trace" "status $AT_STATUS: $(head -5 "$AT_TMP/out" "$AT_TMP/err")"; fi
}

if [ "$(id -u)" != 0 ]; then
    skip "attach" "needs root (BPF programs, uprobes, ptrace)"
elif ! command -v jq >/dev/null; then
    skip "attach" "jq is not installed"
elif ! make -s tools >/dev/null 2>&1; then
    fail "attach/build" "make tools failed"
else
    mkdir -p "$AT_TMP"
    cp "$VM" "$AT_TMP/sqvm"
    at_sqflow
    at_sqstack
    at_sqprof
    at_names
    at_lifecycle
fi
