# SPDX-License-Identifier: BSD-2-Clause
# tests/sqprof.sh - sqprof, the sampling profiler (build/tools/sqprof), against the VM
# running the workloads of tests/sqprof/, whose profiles are known in advance; sourced by
# tests/run.sh (uses its pass/fail/skip, $VM and $TMP). Needs root (BPF, perf events).
#
# A sample lands where the VM spends its time, so the checks are of two kinds: exact
# (every stack holds the expected chain of methods, outermost first; the truncated
# samples are exactly the deep ones) and proportional, with a stated tolerance (80% of
# the time in one method and 20% in another, each within 10 points).
#
# Synchronisation without sleeps (as tests/tools.sh): a workload waits for its "go" file
# and spins until its "stop" file exists; the profiler samples for a fixed -d in between,
# or until the VM exits.

SP_TOOL=build/tools/sqprof
SP_DIR=tests/sqprof
SP_TMP="$TMP/sqprof"
SP_TIMEOUT=30

# Starts a VM on a workload, waiting until it sleeps in its waitFor: loop; sets SP_VM_PID
# (and SP_GO, SP_STOP, the files it waits for). The VM's output is in $SP_TMP/vm.out.
sp_start_vm() { # vm-flags... -- workload [vm-binary]
    local flags=() vm=$VM i
    while [ "$1" != "--" ]; do flags+=("$1"); shift; done
    shift
    [ -n "${2:-}" ] && vm=$2
    SP_GO="$SP_TMP/go.$RANDOM$RANDOM"
    SP_STOP="$SP_TMP/stop.$RANDOM$RANDOM"
    "$vm" "${flags[@]}" "$SP_DIR/$1.som" "$SP_GO" "$SP_STOP" >"$SP_TMP/vm.out" 2>&1 </dev/null &
    SP_VM_PID=$!
    for ((i = 0; i < 1000; i++)); do
        kill -0 "$SP_VM_PID" 2>/dev/null || return 1
        readlink "/proc/$SP_VM_PID/exe" | grep -q '/sqvm$' &&
            grep -q nanosleep "/proc/$SP_VM_PID/wchan" 2>/dev/null && return 0
        sleep 0.01
    done
    return 1
}

# Lets the workload go and waits until it has left its wait loop (it no longer sleeps).
sp_go() {
    local i busy=0
    touch "$SP_GO"
    for ((i = 0; i < 500 && busy < 3; i++)); do
        if grep -q nanosleep "/proc/$SP_VM_PID/wchan" 2>/dev/null; then busy=0; else busy=$((busy + 1)); fi
        sleep 0.005
    done
}

# Ends the workload and reaps the VM; SP_VM_STATUS is its exit status.
sp_stop() {
    touch "$SP_GO" "$SP_STOP"
    wait "$SP_VM_PID" 2>/dev/null
    SP_VM_STATUS=$?
}

# Runs sqprof in the background: output to $SP_TMP/NAME.out and .err; sets SP_TOOL_PID.
sp_start_tool() { # name args...
    local name=$1
    shift
    start_bg "$SP_TMP/$name.out" "$SP_TMP/$name.err" "$SP_TIMEOUT" "$SP_TOOL" "$@"
    SP_TOOL_PID=$BG_PID
}

# Waits until the tool's "Sampling ..." line is out (on stdout or stderr), or it died.
sp_wait_sampling() { # name
    wait_line "$SP_TMP/$1.out" "$SP_TMP/$1.err" '^Sampling ' "$SP_TOOL_PID"
}

# Is the file well-formed XML?
sp_xml_ok() {
    python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$1" 2>&1
}

# Field n of the table row of a method: SELF SELF% TOTAL TOTAL% METHOD.
sp_row() { # file method field
    awk -v m="$2" -v f="$3" '{ line = $0; sub(/^ *[0-9]+ +[0-9.]+% +[0-9]+ +[0-9.]+%  /, "", line) }
        line == m && NF >= 5 { v = $f; sub(/%$/, "", v); print v; exit }' "$1"
}

# Is x within [lo, hi]? (decimals allowed)
sp_between() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x + 0 >= lo && x + 0 <= hi) }'; }

# Without go, a case that needs go tool pprof: skipped here, failed on CI (deps.sh
# installs golang-go there, so its absence is a broken set-up, not a reason to pass).
sp_no_go() { # case name
    local why="go is not installed (Debian's golang-go: scripts/deps.sh)"
    if [ "${CI:-}" = true ]; then fail "$1" "$why"; else skip "$1" "$why"; fi
}

# ---- pprof files, read by pprof itself -------------------------------------------

# What `go tool pprof -raw` reads of a file, as JSON (tests/sqprof/pprofraw.py); pprof's
# options (-tagfocus ...) may come before the file.
sp_pprof_raw() { python3 "$SP_DIR/pprofraw.py" "$@" 2>&1; }

# The first row of `go tool pprof -top`: "FLAT% NAME".
sp_pprof_top() {
    go tool pprof -top "$1" 2>/dev/null | awk '/^ *flat +flat%/ { getline; line = $0
        sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", line); print $2, line; exit }'
}

sp_have_go() {
    command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1
}

# ---- CPU: proportions and call chains ------------------------------------------

SP_SPIN_CHAIN='System>>initialize:;ProfSpin>>run:;ProfSpin>>outer:;ProfSpin>>middle:;ProfSpin>>inner:'

# Opens a speedscope file in speedscope in headless Chromium: the page must have taken the
# profile's name as its title and list the expected frame in its Sandwich table.
sp_viewer() { # file frame-as-html
    local dom
    if ! dom=$(speedscope_dom "$1" profile.json); then
        skip "sqprof/speedscope viewer" "$dom"; return
    fi
    if grep -q "<title>sqprof, PID [0-9]* - speedscope</title>" <<<"$dom" && grep -qF "$2" <<<"$dom"; then
        pass "sqprof/speedscope viewer: speedscope $(jq -r .version build/deps/speedscope/node_modules/speedscope/package.json) in headless Chromium opens the file and lists $2"
    else fail "sqprof/speedscope viewer" "$(head -c 800 <<<"$dom")"; fi
}

sp_cpu() {
    local pid_f pid_t n bad hot cold total
    if ! sp_start_vm -- ProfSpin; then
        fail "sqprof/cpu" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    # Two profilers at once on the same VM: folded stacks, and the table with a flame graph.
    sp_start_tool spin-f -p "$SP_VM_PID" -F 999 -d 1 -f
    pid_f=$SP_TOOL_PID
    sp_start_tool spin-t -p "$SP_VM_PID" -F 999 -d 1 -n 0 --svg "$SP_TMP/spin.svg" \
        --speedscope "$SP_TMP/spin.speedscope.json" --pprof "$SP_TMP/spin.pb.gz"
    pid_t=$SP_TOOL_PID
    wait "$pid_f"
    local st_f=$?
    wait "$pid_t"
    local st_t=$?
    sp_stop

    # Every stack: the whole chain, outermost first, then hot, cold or nothing (the loop).
    n=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/spin-f.out")
    bad=$(awk -v chain="$SP_SPIN_CHAIN" '{
            stack = $0; sub(/ [0-9]+$/, "", stack)
            if (stack != chain && stack != chain ";ProfSpin>>hot" && stack != chain ";ProfSpin>>cold") print
        }' "$SP_TMP/spin-f.out")
    if [ "$st_f" = 0 ] && [ "$n" -ge 100 ] && [ -z "$bad" ] &&
        grep -q "^sqprof: $n samples, 0 truncated (--max-depth 127), 0 lost, 0 inconsistent$" "$SP_TMP/spin-f.err"; then
        pass "sqprof/cpu -f: all $n stacks hold the chain run: -> outer: -> middle: -> inner:, outermost first"
    else fail "sqprof/cpu -f (chain in every stack)" "status $st_f, $n samples; unexpected stacks:
$(echo "$bad" | head -5)
$(cat "$SP_TMP/spin-f.out" "$SP_TMP/spin-f.err" | head -20)"; fi

    # The table: hot 80% and cold 20% of the samples (each within 10 points); every
    # method of the chain on every stack.
    hot=$(sp_row "$SP_TMP/spin-t.out" 'ProfSpin>>hot' 2)
    cold=$(sp_row "$SP_TMP/spin-t.out" 'ProfSpin>>cold' 2)
    total=$(for m in 'ProfSpin>>run:' 'ProfSpin>>outer:' 'ProfSpin>>middle:' 'ProfSpin>>inner:'; do
        sp_row "$SP_TMP/spin-t.out" "$m" 4; done | sort -u | tr '\n' ' ')
    if [ "$st_t" = 0 ] && sp_between "$hot" 70 90 && sp_between "$cold" 10 30 && [ "$total" = "100.00 " ]; then
        pass "sqprof/cpu table: hot ${hot}% and cold ${cold}% self (80/20 +-10), the chain 100% total"
    else fail "sqprof/cpu table (80/20 split)" "status $st_t, hot '$hot' cold '$cold' chain totals '$total'
$(cat "$SP_TMP/spin-t.out" "$SP_TMP/spin-t.err" | head -20)"; fi

    # The flame graph written by the live run, and the folded stacks round-tripped
    # through it (-i): well-formed XML, the frames, and the total.
    local xml1 xml2 rt_status missing
    xml1=$(sp_xml_ok "$SP_TMP/spin.svg")
    "$SP_TOOL" -i "$SP_TMP/spin-f.out" --svg "$SP_TMP/spin-rt.svg" >"$SP_TMP/spin-rt.out" 2>&1
    rt_status=$?
    xml2=$(sp_xml_ok "$SP_TMP/spin-rt.svg")
    missing=$(tr ';' '\n' <"$SP_TMP/spin-f.out" | sed 's/ [0-9]*$//' | sort -u | sed 's/>/\&gt;/g' |
        while read -r frame; do grep -qF "<title>$frame (" "$SP_TMP/spin-rt.svg" || echo "$frame"; done)
    if [ -z "$xml1" ] && [ -z "$xml2" ] && [ "$rt_status" = 0 ] && [ -z "$missing" ] &&
        grep -q 'ProfSpin&gt;&gt;hot (' "$SP_TMP/spin.svg" &&
        grep -q "<title>all ($n samples, 100.00%)</title>" "$SP_TMP/spin-rt.svg" &&
        grep -q "^$SP_TMP/spin-f.out: $n samples in [0-9]* stacks, 0 truncated$" "$SP_TMP/spin-rt.out"; then
        pass "sqprof/svg: --svg and -f | -i --svg are well-formed XML with every frame and the total ($n)"
    else fail "sqprof/svg" "xml: $xml1 / $xml2; -i status $rt_status; frames missing: $missing
$(head -5 "$SP_TMP/spin-rt.out")"; fi

    # speedscope: the schema, a sampled profile, nanosecond weights (one per sample,
    # summing to the samples times the 999 Hz period), the hot method with its file and
    # line; 80% of the weight in stacks whose leaf is hot.
    local ss
    ss=$(jq -r '
        .shared.frames as $f | .profiles[0] as $p |
        ([$f | to_entries[] | select(.value.name == "ProfSpin>>hot") | .key][0]) as $hot |
        [."$schema", $p.type, $p.unit, ($p.samples | length) == ($p.weights | length),
         ($f[$hot] | "\(.file):\(.line > 0)"),
         (([range(0; $p.samples | length) | select($p.samples[.][-1] == $hot) | $p.weights[.]] | add) / ($p.weights | add) * 100 | floor),
         ($p.weights | add) == $p.endValue] | map(tostring) | join(" ")' "$SP_TMP/spin.speedscope.json" 2>&1)
    read -r schema sstype ssunit sslen ssfile sshot ssend <<<"$ss"
    if [ "$st_t" = 0 ] && [ "$schema $sstype $ssunit $sslen $ssfile $ssend" = "https://www.speedscope.app/file-format-schema.json sampled nanoseconds true ProfSpin.som:true true" ] &&
        sp_between "$sshot" 70 90; then
        pass "sqprof --speedscope: a sampled profile in nanoseconds, ProfSpin>>hot with file and line, ${sshot}% of the weight"
    else fail "sqprof --speedscope" "status $st_t: $ss"; fi

    # pprof: decoded by Debian's protoc against profile.proto (written in tests/sqprof/):
    # the sample types, the hot method named, with its file
    if command -v protoc >/dev/null; then
        local dec types
        dec=$(zcat "$SP_TMP/spin.pb.gz" | protoc --decode=perftools.profiles.Profile -I "$SP_DIR" "$SP_DIR/profile.proto" 2>&1)
        types=$(grep -o 'string_table: "[^"]*"' <<<"$dec" | sed -n '2,5p' | sed 's/string_table: //' | tr -d '"' | tr '\n' ' ')
        if [ "$st_t" = 0 ] && [ "$types" = "samples count cpu nanoseconds " ] &&
            grep -q 'string_table: "ProfSpin>>hot"' <<<"$dec" && grep -q 'string_table: "ProfSpin.som"' <<<"$dec" &&
            grep -q '^period: 1001001$' <<<"$dec" && [ "$(grep -c '^sample {' <<<"$dec")" -ge 2 ]; then
            pass "sqprof --pprof: gzipped profile.proto, samples/count and cpu/nanoseconds, ProfSpin>>hot in ProfSpin.som"
        else fail "sqprof --pprof" "status $st_t, types '$types': $(head -30 <<<"$dec")"; fi
    else
        skip "sqprof --pprof" "protoc is not installed (Debian's protobuf-compiler)"
    fi

    # pprof itself: go tool pprof -raw reads the types, the period, and every sample's
    # labels (the VM, its command line, the green process) and whole stack, leaf first;
    # -top puts hot first with ~80%.
    if sp_have_go; then
        local raw top
        raw=$(sp_pprof_raw "$SP_TMP/spin.pb.gz")
        top=$(sp_pprof_top "$SP_TMP/spin.pb.gz")
        got=$(jq -r --arg pid "$SP_VM_PID" '
            [(.types | join(" ")), .periodtype, .period, (.samples | length > 1),
             (.samples | all(.labels.pid == $pid and .labels.process == "main" and (.labels.cmdline | test("ProfSpin[.]som")))),
             (.samples | all(.stack[-1] == "System>>initialize:" and (.stack | index("ProfSpin>>inner:")) != null))]
            | map(tostring) | join(" | ")' <<<"$raw" 2>&1)
        if [ "$st_t" = 0 ] && [ "$got" = "samples/count cpu/nanoseconds | cpu nanoseconds | 1001001 | true | true | true" ] &&
            [[ "$top" == *"% ProfSpin>>hot" ]] && sp_between "${top%%%*}" 70 90; then
            pass "sqprof --pprof, read by go tool pprof: cpu/nanoseconds every 1001001 ns, labels pid, cmdline, process=main on every sample, -top: hot ${top%%%*}%"
        else fail "sqprof --pprof (go tool pprof)" "'$got', top '$top': $(head -c 600 <<<"$raw")"; fi
    else
        sp_no_go "sqprof --pprof (go tool pprof)"
    fi

    # A real viewer: npm's speedscope (scripts/deps.sh puts it in build/deps/) in headless
    # Chromium loads the file over HTTP, and its Sandwich view lists the methods.
    sp_viewer "$SP_TMP/spin.speedscope.json" 'ProfSpin&gt;&gt;hot'

    # The script of the flame graph (zoom, reset, hover, search) under a minimal DOM.
    if command -v node >/dev/null; then
        local js
        js=$(node "$SP_DIR/svgcheck.js" "$SP_TMP/spin-rt.svg" 'ProfSpin>>hot' 2>&1)
        if [[ "$js" == *"Matched: "*"ok "* ]]; then
            pass "sqprof/svg script: click zooms to full width, Esc resets, search matches"
        else fail "sqprof/svg script" "$js"; fi
    else
        skip "sqprof/svg script" "no node to run the flame graph's JavaScript"
    fi
}

# ---- Deep recursion: truncated, not misattributed --------------------------------

# A target's long names (review finding 16): ProfDeep's 204 frames with a selector of
# 1,000 characters, under --max-depth 300, would fold into 200 KiB a stack; the folded
# stack stops at 64 KiB with a last frame [truncated].
sp_long_names() {
    local long st n bad
    long=$(printf 'x%.0s' $(seq 1000))
    sed "s/recurse:/recurse$long:/g" "$SP_DIR/ProfDeep.som" >"$SP_TMP/ProfDeep.som"
    if ! SP_DIR=$SP_TMP sp_start_vm -- ProfDeep; then
        fail "sqprof/long names" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    sp_start_tool long -p "$SP_VM_PID" -F 199 -d 1 --max-depth 300 -f
    wait "$SP_TOOL_PID"; st=$?
    sp_stop
    n=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/long.out")
    bad=$(awk 'length($0) > 65536 || $0 !~ /;\[truncated\] [0-9]+$/ { print length($0) " bytes: " substr($0, 1, 80) "..." substr($0, length($0) - 40) }' "$SP_TMP/long.out" | head -3)
    if [ "$st" = 0 ] && [ "$n" -ge 20 ] && [ -z "$bad" ]; then
        pass "sqprof/long names: $n samples of 204 frames of 1,000-character selectors, each folded stack cut at 64 KiB with [truncated]"
    else fail "sqprof/long names" "status $st; $n samples; $bad $(head -2 "$SP_TMP/long.err")"; fi
}

sp_deep() {
    local s64 s300 s127 n64 n300 n127 bad64 bad300 want300
    if ! sp_start_vm -- ProfDeep; then
        fail "sqprof/deep" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    sp_start_tool deep64 -p "$SP_VM_PID" -F 999 -d 1 --max-depth 64 -f
    s64=$SP_TOOL_PID
    sp_start_tool deep300 -p "$SP_VM_PID" -F 999 -d 1 --max-depth 300 -f
    s300=$SP_TOOL_PID
    sp_start_tool deep127 -p "$SP_VM_PID" -F 999 -d 1
    s127=$SP_TOOL_PID
    wait "$s64"; s64=$?
    wait "$s300"; s300=$?
    wait "$s127"; s127=$?
    sp_stop

    # 204 frames: with --max-depth 64 every sample is truncated, to the 64 innermost
    # frames (63 recurse:stop: and leaf:) under [truncated]; run: never appears as a root.
    n64=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/deep64.out")
    bad64=$(awk '{
            stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
            ok = k == 65 && f[1] == "[truncated]" && f[65] == "ProfDeep>>leaf:"
            for (i = 2; i < 65; i++) ok = ok && f[i] == "ProfDeep>>recurse:stop:"
            if (!ok) print substr($0, 1, 200) " (" k " frames)"
        }' "$SP_TMP/deep64.out")
    if [ "$s64" = 0 ] && [ "$n64" -ge 100 ] && [ -z "$bad64" ] &&
        grep -q "^sqprof: $n64 samples, $n64 truncated (--max-depth 64), 0 lost, 0 inconsistent$" "$SP_TMP/deep64.err"; then
        pass "sqprof/deep --max-depth 64: all $n64 samples truncated, [truncated] + the 64 innermost frames"
    else fail "sqprof/deep --max-depth 64" "status $s64; $n64 samples; $(head -2 "$SP_TMP/deep64.err")
$(echo "$bad64" | head -3)"; fi

    # With room for them, every sample has the 204 frames, none truncated.
    want300="System>>initialize:;ProfDeep>>run:$(for ((i = 0; i < 201; i++)); do printf ';ProfDeep>>recurse:stop:'; done);ProfDeep>>leaf:"
    n300=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/deep300.out")
    bad300=$(awk -v want="$want300" '{ stack = $0; sub(/ [0-9]+$/, "", stack); if (stack != want) print substr($0, 1, 200) }' \
        "$SP_TMP/deep300.out")
    if [ "$s300" = 0 ] && [ "$n300" -ge 100 ] && [ -z "$bad300" ] &&
        grep -q "^sqprof: $n300 samples, 0 truncated (--max-depth 300), 0 lost, 0 inconsistent$" "$SP_TMP/deep300.err"; then
        pass "sqprof/deep --max-depth 300: all $n300 stacks whole (204 frames), none truncated"
    else fail "sqprof/deep --max-depth 300" "status $s300; $(head -2 "$SP_TMP/deep300.err")
$(echo "$bad300" | head -3)"; fi

    # The table (default --max-depth 127) reports the truncation and credits leaf: alone.
    n127=$(sed -nE 's/^PID [0-9]+, CPU at 999 Hz for [0-9.]+ s: ([0-9]+) samples, ([0-9]+) truncated \(--max-depth 127\), 0 lost, 0 inconsistent$/\1 \2/p' \
        "$SP_TMP/deep127.out")
    if [ "$s127" = 0 ] && [ -n "$n127" ] && [ "${n127% *}" = "${n127#* }" ] &&
        [ "$(sp_row "$SP_TMP/deep127.out" 'ProfDeep>>leaf:' 2)" = "100.00" ] &&
        [ -z "$(sp_row "$SP_TMP/deep127.out" 'ProfDeep>>run:' 4)" ] &&
        grep -q '^Truncated samples were deeper than 127 frames' "$SP_TMP/deep127.out"; then
        pass "sqprof/deep table: '${n127% *} samples, ${n127#* } truncated', run: (beyond the cut) not credited"
    else fail "sqprof/deep table" "status $s127: $(head -12 "$SP_TMP/deep127.out")"; fi
}

# ---- The collector moves objects between samples ---------------------------------

sp_gc() {
    local st n bad gcfns ingc young
    if ! sp_start_vm --young 256K --gc-stats -- ProfGc; then
        fail "sqprof/gc" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    # -U: the innermost C frame tells the samples taken inside the collector; -K adds the
    # kernel's (page faults of a growing heap).
    sp_start_tool gc -p "$SP_VM_PID" -F 999 -d 1 -f -U -K
    wait "$SP_TOOL_PID"
    st=$?
    sp_stop
    young=$(sed -nE 's/^gc: young ([0-9]+) .*/\1/p' "$SP_TMP/vm.out")

    # Every stack: run: -> churn: [-> build: [-> cons:with:]], then only C or kernel frames.
    n=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/gc.out")
    bad=$(awk '{
            stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
            ok = k >= 3 && f[1] == "System>>initialize:" && f[2] == "ProfGc>>run:" && f[3] == "ProfGc>>churn:"
            i = 4
            if (i <= k && f[i] == "ProfGc>>build:") i++
            if (i <= k && f[i - 1] == "ProfGc>>build:" && f[i] == "ProfGc>>cons:with:") i++
            for (; i <= k; i++) ok = ok && f[i] !~ />>/ && f[i] !~ /^\[unknown 0x/
            if (!ok) print substr($0, 1, 300)
        }' "$SP_TMP/gc.out")
    # The collector's functions (those vm/gc.c defines), as innermost C frame.
    gcfns=$(sed -nE 's/^[a-zA-Z][a-zA-Z0-9_ *]*[ *]([a-z_][a-z0-9_]*)\(.*[^;]$/\1/p' vm/gc.c | sort -u | tr '\n' '|')
    ingc=$(awk -v fns="|$gcfns" '{
            stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
            for (i = k; i > 0 && f[i] ~ /_\[k\]$/; i--) ;
            if (i > 0 && index(fns, "|" f[i] "|")) s += $NF
        } END { print s + 0 }' "$SP_TMP/gc.out")
    if [ "$st" = 0 ] && [ "$n" -ge 100 ] && [ -z "$bad" ] && [ "${young:-0}" -ge 20 ] && [ "$ingc" -ge 3 ]; then
        pass "sqprof/gc: $n stacks exact across ${young} young collections ($ingc samples inside the collector)"
    else fail "sqprof/gc (stacks while the collector runs)" "status $st, $n samples, young '$young', $ingc in gc
$(echo "$bad" | head -5)
$(head -3 "$SP_TMP/gc.err")"; fi
}

# ---- Green processes take turns ---------------------------------------------------

sp_procs() {
    local st n a b bad other
    if ! sp_start_vm -- ProfProcs; then
        fail "sqprof/processes" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    # No -d: sqprof ends when the VM does, and names the methods of a process that has gone.
    sp_start_tool procs -p "$SP_VM_PID" -F 999 -f
    if ! sp_wait_sampling procs; then
        sp_stop
        wait "$SP_TOOL_PID"
        fail "sqprof/processes" "sqprof did not start: $(head -3 "$SP_TMP/procs.err")"
        return
    fi
    sleep 1
    sp_stop
    wait "$SP_TOOL_PID"
    st=$?

    n=$(awk '{ s += $NF } END { print s + 0 }' "$SP_TMP/procs.out")
    a=$(awk '/ProfProcs>>spinA/ { s += $NF } END { print s + 0 }' "$SP_TMP/procs.out")
    b=$(awk '/ProfProcs>>spinB/ { s += $NF } END { print s + 0 }' "$SP_TMP/procs.out")
    bad=$(awk '{
            stack = $0; sub(/ [0-9]+$/, "", stack)
            if (stack ~ /spinA/ && stack != "[] in ProfProcs>>run:;ProfProcs>>workerA:;ProfProcs>>spinA") print
            if (stack ~ /spinB/ && stack != "[] in ProfProcs>>run:;ProfProcs>>workerB:;ProfProcs>>spinB") print
            if (stack ~ /workerA/ && stack ~ /workerB/) print
            if (stack ~ /\[unknown/) print
        }' "$SP_TMP/procs.out")
    other=$((n - a - b))
    if [ "$st" = 0 ] && [ "$n" -ge 100 ] && [ -z "$bad" ] && [ $((a * 4)) -ge "$n" ] &&
        [ $((b * 4)) -ge "$n" ] && [ $((other * 10)) -le "$n" ]; then
        pass "sqprof/processes: spinA ($a) only under A's stack, spinB ($b) only under B's, of $n"
    else fail "sqprof/processes" "status $st; $n samples, A $a, B $b
$(echo "$bad" | head -5)
$(cat "$SP_TMP/procs.out" | head -10)"; fi
}

# ---- Allocation profile -----------------------------------------------------------

sp_alloc() {
    local st got
    if ! readelf -n "$VM" 2>/dev/null | grep -q 'Name: object__alloc__sample'; then
        skip "sqprof/alloc" "$VM has no squeak:object__alloc__sample probe (built with PROBES=0?)"
        return
    fi
    if ! sp_start_vm --alloc-sample 4K -- ProfAlloc; then
        fail "sqprof/alloc" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_start_tool alloc -p "$SP_VM_PID" --alloc -j --svg "$SP_TMP/alloc.svg" \
        --speedscope "$SP_TMP/alloc.speedscope.json" --pprof "$SP_TMP/alloc.pb.gz"
    if ! sp_wait_sampling alloc; then
        sp_stop
        wait "$SP_TOOL_PID"
        fail "sqprof/alloc" "sqprof did not start: $(head -3 "$SP_TMP/alloc.err")"
        return
    fi
    touch "$SP_GO"		# it allocates, then exits: sqprof reports when it has gone
    wait "$SP_TOOL_PID"
    st=$?
    sp_stop
    # 300,007 ProfPoints of 24 bytes: 7,200,168 bytes, estimated within 10%, all in
    # ProfPoint class>>x:y: under run: -> outer: -> inner:.
    got=$(jq -r '
        ([.stacks[].frames] | unique) as $s |
        if .mode == "alloc" and .unit == "bytes" and (.weight - 7200168 | fabs) < 720017 and
           $s == [["System>>initialize:","ProfAlloc>>run:","ProfAlloc>>outer:","ProfAlloc>>inner:","ProfPoint class>>x:y:"]] and
           .methods[0].method == "ProfPoint class>>x:y:" and .methods[0].self == .weight and .truncated == 0
        then "ok \(.weight) bytes in \(.samples) samples" else "off: \(.weight) bytes, stacks \($s)" end' \
        "$SP_TMP/alloc.out" 2>&1)
    if [ "$st" = 0 ] && [[ "$got" == ok* ]] && [ -z "$(sp_xml_ok "$SP_TMP/alloc.svg")" ] &&
        grep -q 'ProfPoint class&gt;&gt;x:y: ([0-9]* bytes, 100.00%)' "$SP_TMP/alloc.svg"; then
        pass "sqprof/alloc: $got (exact 7200168), one stack, allocation flame graph"
    else fail "sqprof/alloc" "status $st; $got; $(head -3 "$SP_TMP/alloc.err")"; fi

    # the exports in bytes: speedscope's unit, pprof's alloc_space/bytes, the same total
    local ss total dec
    total=$(jq -r '.weight' "$SP_TMP/alloc.out" 2>/dev/null)
    ss=$(jq -r '.profiles[0] | "\(.unit) \(.weights | add)"' "$SP_TMP/alloc.speedscope.json" 2>&1)
    if command -v protoc >/dev/null; then
        dec=$(zcat "$SP_TMP/alloc.pb.gz" | protoc --decode=perftools.profiles.Profile -I "$SP_DIR" "$SP_DIR/profile.proto" 2>&1)
    fi
    if [ "$ss" = "bytes $total" ] && { [ -z "$dec" ] || { grep -q 'string_table: "alloc_space"' <<<"$dec" &&
        grep -q 'string_table: "bytes"' <<<"$dec" && grep -q "^  value: $total\$" <<<"$dec"; }; }; then
        pass "sqprof/alloc --speedscope and --pprof: bytes ($total) in both"
    else fail "sqprof/alloc exports" "speedscope '$ss' (total $total); pprof: $(head -20 <<<"$dec")"; fi

    # pprof itself: alloc_space/bytes, the period the VM samples at (--alloc-sample 4K),
    # every sample in x:y: under the chain, labeled, and the bytes as the JSON said
    if sp_have_go; then
        local raw top got
        raw=$(sp_pprof_raw "$SP_TMP/alloc.pb.gz")
        top=$(sp_pprof_top "$SP_TMP/alloc.pb.gz")
        got=$(jq -r --arg pid "$SP_VM_PID" '
            [(.types | join(" ")), .periodtype, .period, ([.samples[].values[1]] | add),
             (.samples | all(.stack == ["ProfPoint class>>x:y:", "ProfAlloc>>inner:", "ProfAlloc>>outer:", "ProfAlloc>>run:", "System>>initialize:"])),
             (.samples | all(.labels.pid == $pid and .labels.process == "main"))]
            | map(tostring) | join(" | ")' <<<"$raw" 2>&1)
        if [ "$st" = 0 ] && [ "$got" = "samples/count alloc_space/bytes | alloc_space bytes | 4096 | $total | true | true" ] &&
            [ "$top" = "100% ProfPoint class>>x:y:" ]; then
            pass "sqprof --alloc --pprof, read by go tool pprof: alloc_space/bytes, period 4096 (--alloc-sample), $total bytes, -top: x:y: 100%"
        else fail "sqprof --alloc --pprof (go tool pprof)" "'$got', top '$top': $(head -c 600 <<<"$raw")"; fi
    else
        sp_no_go "sqprof --alloc --pprof (go tool pprof)"
    fi
}

# ---- Continuous profiles ----------------------------------------------------------

# The fields of a pprof file that protoc decodes: "time_nanos duration_nanos period".
sp_pprof_times() {
    zcat "$1" | protoc --decode=perftools.profiles.Profile -I "$SP_DIR" "$SP_DIR/profile.proto" 2>/dev/null |
        awk '/^time_nanos:/ { t = $2 } /^duration_nanos:/ { d = $2 } /^period:/ { p = $2 } END { print t, d, p }'
}

sp_every() {
    local dir="$SP_TMP/every" st written kept want f n names bad times labels total sum merged
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! sp_start_vm -- ProfNamed; then
        fail "sqprof --every" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    # A symlink planted at each temporary name the tool used to write through (DIR/.NAME.tmp
    # for the VM's pid and every second of the next 30), at a victim: no file is written
    # through a planted name, so the victim is untouched (finding 11).
    local victim="$SP_TMP/every-victim" now s
    echo "must not change" >"$victim"
    now=$(date -u +%s)
    for s in $(seq -2 30); do
        ln -s "$victim" "$dir/.sqprof-$SP_VM_PID-$(date -u -d "@$((now + s))" +%Y-%m-%dT%H:%M:%SZ).pb.gz.tmp"
    done
    # 3.5 s in periods of 1 s: three whole ones and a half one, the oldest removed by --keep 3
    sp_start_tool every -p "$SP_VM_PID" -F 999 --every 1s --out "$dir" --keep 3 -d 3.5 -v
    wait "$SP_TOOL_PID"
    st=$?
    sp_stop
    if [ "$(cat "$victim")" = "must not change" ] && [ ! -L "$dir/$(ls -A "$dir" | grep -m1 '^sqprof-')" ] &&
        [ "$(stat -c %a "$dir/$(ls -A "$dir" | grep -m1 '^sqprof-')")" = 600 ]; then
        pass "sqprof --every --out: symlinks planted at the old temporary names are not followed (victim untouched), files are 0600"
    else fail "sqprof --every (planted symlinks)" "victim now: $(head -c 80 "$victim" | od -c | head -2); modes: $(stat -c '%a %n' "$dir"/sqprof-* 2>&1 | head -3)"; fi
    rm -f "$dir"/.sqprof-*.tmp
    written=$(sed -n 's|^sqprof: wrote .*/\(sqprof-[^ ]*\) ([0-9]* samples)$|\1|p' "$SP_TMP/every.err")
    want=$(tail -3 <<<"$written" | tr '\n' ' ')
    kept=$(ls -A "$dir" | tr '\n' ' ')
    names=$(ls -A "$dir" | grep -cE "^sqprof-$SP_VM_PID-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\.pb\.gz$")
    if [ "$st" = 0 ] && [ "$(wc -l <<<"$written")" = 4 ] && [ "$kept" = "$want" ] && [ "$names" = 3 ]; then
        pass "sqprof --every 1s -d 3.5 --keep 3: 4 files written, the newest 3 kept, named sqprof-PID-<UTC start>.pb.gz, no temporary file left"
    else fail "sqprof --every (files)" "status $st; written: $written; kept: $kept; $(head -3 "$SP_TMP/every.err")"; fi

    # Each file's time_nanos is its name's second; whole periods last 1 s, the last 0.5 s;
    # the period is 999 Hz's
    bad=""
    n=0
    for f in $want; do
        n=$((n + 1))
        read -r t d p <<<"$(sp_pprof_times "$dir/$f")"
        [ "sqprof-$SP_VM_PID-$(date -u -d "@$((t / 1000000000))" +%Y-%m-%dT%H:%M:%SZ).pb.gz" = "$f" ] || bad="$bad $f:time=$t"
        [ "$p" = 1001001 ] || bad="$bad $f:period=$p"
        if [ "$n" -lt 3 ]; then sp_between "$d" 950000000 1100000000 || bad="$bad $f:duration=$d"
        else sp_between "$d" 450000000 650000000 || bad="$bad $f:duration=$d"; fi
    done
    if [ -z "$bad" ]; then
        pass "sqprof --every: time_nanos is the name's second, duration_nanos 1 s (the last 0.5 s), period set"
    else fail "sqprof --every (time_nanos, duration_nanos, period)" "$bad"; fi

    if ! sp_have_go; then
        sp_no_go "sqprof --every (go tool pprof)"
        return
    fi
    # go tool pprof reads each one: every sample labeled pid, cmdline and its green
    # process, spinA only in alpha and spinB only in beta, each about half
    labels=$(for f in $want; do sp_pprof_raw "$dir/$f"; done | jq -rs --arg pid "$SP_VM_PID" '
        [.[].samples[]] as $s |
        ($s | map(.values[0]) | add) as $n |
        [($s | all(.labels.pid == $pid and (.labels.cmdline | test("ProfNamed[.]som")))),
         ([$s[] | select(.stack[0] == "ProfNamed>>spinA") | .labels.process] | unique == ["alpha"]),
         ([$s[] | select(.stack[0] == "ProfNamed>>spinB") | .labels.process] | unique == ["beta"]),
         ([$s[].labels.process] | unique == ["alpha", "beta"]),
         (([$s[] | select(.labels.process == "alpha") | .values[0]] | add) * 4 >= $n),
         (([$s[] | select(.labels.process == "beta") | .values[0]] | add) * 4 >= $n),
         $n] | map(tostring) | join(" ")' 2>&1)
    total=${labels##* }
    if [ "${labels% *}" = "true true true true true true" ]; then
        pass "sqprof --every, read by go tool pprof: $total samples, each labeled pid, cmdline, process; spinA only in alpha, spinB only in beta"
    else fail "sqprof --every (labels)" "$labels"; fi

    # go tool pprof -proto merges the run's files into one valid profile with all of it
    merged="$SP_TMP/every-merged.pb.gz"
    (cd "$dir" && go tool pprof -proto $want) >"$merged" 2>"$SP_TMP/merge.err"
    sum=$(sp_pprof_raw "$merged" | jq -r '[.samples[].values[0]] | add' 2>&1)
    if [ "$sum" = "$total" ] && [ "$(sp_pprof_top "$merged" | cut -d' ' -f2-)" != "" ]; then
        pass "sqprof --every: go tool pprof -proto merges the 3 files into one profile of all $total samples"
    else fail "sqprof --every (merge)" "merged $sum of $total: $(head -3 "$SP_TMP/merge.err")"; fi
}

# The PIDs in a running tool's BPF map NAME (keys beginning with a __u32 PID), sorted, on
# one line: found through the tool's fds (fdinfo's map_id), read with bpftool.
sp_map_pids() { # tool-pid map-name
    local fd id
    for fd in /proc/"$1"/fdinfo/*; do
        id=$(sed -n 's/^map_id:[[:space:]]*//p' "$fd" 2>/dev/null)
        [ -n "$id" ] || continue
        [ "$(bpftool map show id "$id" -j 2>/dev/null | jq -r .name)" = "$2" ] || continue
        bpftool map dump id "$id" -j 2>/dev/null |
            jq -r '.[] | .formatted.key // (.key[0:4] | map(ltrimstr("0x") | explode |
                map(if . >= 97 then . - 87 else . - 48 end) | .[0] * 16 + .[1]) |
                .[0] + 256 * (.[1] + 256 * (.[2] + 256 * .[3])))' 2>/dev/null
        return
    done
}

# --every outlives the VMs it profiles (finding 12): with a table of 2 (SQPROF_MAX_VMS, a
# size for the tests only: tools/sqprof.c, max_vms), two idle VMs are profiled and
# exit, and are forgotten (their BPF vms entries too); two more start and are
# profiled (before, the dead two kept the table full and the new ones got no file, in
# silence); a fifth, while those two live, is refused, said once on stderr with a count,
# and gets no file. Every file's PID is one of the first four, each of them has one.
sp_every_churn() {
    local dir="$SP_TMP/every-churn" bin="$SP_TMP/churn/sqvm" err="$SP_TMP/churn.err" st pids p i
    local vm=() go=() stop=() bad="" inmap
    rm -rf "$dir" "${bin%/*}"
    mkdir -p "$dir" "${bin%/*}"
    cp "$VM" "$bin"
    churn_vm() { # slot
        sp_start_vm -- ProfSpin "$bin" || bad="$bad VM$1-did-not-start"
        vm[$1]=$SP_VM_PID go[$1]=$SP_GO stop[$1]=$SP_STOP
    }
    churn_end() { # slot
        touch "${go[$1]}" "${stop[$1]}"
        wait "${vm[$1]}" 2>/dev/null
    }
    churn_vm 1
    churn_vm 2
    start_bg "$SP_TMP/churn.out" "$err" "$SP_TIMEOUT" env SQPROF_MAX_VMS=2 "$SP_TOOL" --vm "$bin" --every 1s \
        --out "$dir" -v
    SP_TOOL_PID=$BG_PID
    for i in 1 2; do wait_line "$SP_TMP/churn.out" "$err" "^sqprof: PID ${vm[$i]} (" "$SP_TOOL_PID" || bad="$bad VM$i-not-added"; done
    churn_end 1
    churn_end 2
    for i in 1 2; do wait_line "$SP_TMP/churn.out" "$err" "^sqprof: PID ${vm[$i]} has exited: forgotten$" "$SP_TOOL_PID" || bad="$bad VM$i-not-forgotten"; done
    churn_vm 3
    churn_vm 4
    for i in 3 4; do wait_line "$SP_TMP/churn.out" "$err" "^sqprof: PID ${vm[$i]} (" "$SP_TOOL_PID" || bad="$bad VM$i-not-added"; done
    # the tool is timeout's child (start_bg)
    inmap=$(sp_map_pids "$(cat /proc/"$SP_TOOL_PID"/task/*/children | tr -d ' ')" vms | sort -n | tr '\n' ' ')
    [ "$inmap" = "$(printf '%s\n' "${vm[3]}" "${vm[4]}" | sort -n | tr '\n' ' ')" ] || bad="$bad vms-map:'$inmap'"
    churn_vm 5
    wait_line "$SP_TMP/churn.out" "$err" "^sqprof: 1 VM not profiled: the table of 2 VMs is full" "$SP_TOOL_PID" || bad="$bad VM5-not-said"
    churn_end 5
    churn_end 3
    churn_end 4
    for i in 3 4; do wait_line "$SP_TMP/churn.out" "$err" "^sqprof: PID ${vm[$i]} has exited: forgotten$" "$SP_TOOL_PID" || bad="$bad VM$i-not-forgotten"; done
    kill -INT "$SP_TOOL_PID" 2>/dev/null
    wait "$SP_TOOL_PID"
    st=$?
    pids=$(ls -A "$dir" | sed -n 's/^sqprof-\([0-9]*\)-.*\.pb\.gz$/\1/p' | sort -un | tr '\n' ' ')
    [ "$pids" = "$(printf '%s\n' "${vm[1]}" "${vm[2]}" "${vm[3]}" "${vm[4]}" | sort -n | tr '\n' ' ')" ] || bad="$bad files-of:'$pids'"
    [ "$(grep -c 'not profiled' "$err")" = 1 ] || bad="$bad said-$(grep -c 'not profiled' "$err")-times"
    if [ "$st" = 0 ] && [ -z "$bad" ]; then
        pass "sqprof --every, a table of 2: 4 VMs come and go, each gets its files and is forgotten (BPF vms entries too); a 5th while 2 live: said once, no file"
    else fail "sqprof --every (VMs come and go)" "status $st:$bad (VMs ${vm[*]})
$(grep -v '^sqprof: wrote' "$err" | head -12)"; fi
    rm -rf "${bin%/*}"
}

# Waits until PATTERN is on N lines of FILE (or 10 s pass, or PID dies): 0, else 1.
sp_wait_count() { # file pattern n pid
    local i
    for ((i = 0; i < 1000; i++)); do
        [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
        kill -0 "$4" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# A PID reused (finding 12): a VM profiled by --every exits and a new VM starts on its PID
# (tests/sqprof/withpid.c, clone3's set_tid); the new one is a new VM: added (before, the
# PID was known and it never was), and each is forgotten once it has exited.
sp_every_reuse() {
    local dir="$SP_TMP/every-reuse" bin="$SP_TMP/reuse/sqvm" err="$SP_TMP/reuse.err" st pid helper i
    local go stop bad=""
    if ! cc -O2 -Wall -o "$SP_TMP/withpid" "$SP_DIR/withpid.c" 2>"$SP_TMP/cc.err"; then
        fail "sqprof --every (PID reused)" "cc: $(head -3 "$SP_TMP/cc.err")"
        return
    fi
    rm -rf "$dir" "${bin%/*}"
    mkdir -p "$dir" "${bin%/*}"
    cp "$VM" "$bin"
    if ! sp_start_vm -- ProfSpin "$bin"; then
        fail "sqprof --every (PID reused)" "the VM did not start"
        sp_stop
        return
    fi
    pid=$SP_VM_PID
    start_bg "$SP_TMP/reuse.out" "$err" "$SP_TIMEOUT" "$SP_TOOL" --vm "$bin" --every 1s --out "$dir" -v
    SP_TOOL_PID=$BG_PID
    wait_line "$SP_TMP/reuse.out" "$err" "^sqprof: PID $pid (" "$SP_TOOL_PID" || bad="$bad first-not-added"
    sp_stop
    go="$SP_TMP/go.$RANDOM$RANDOM" stop="$SP_TMP/stop.$RANDOM$RANDOM"
    touch "$go"	# the new VM spins at once
    "$SP_TMP/withpid" "$pid" "$bin" "$SP_DIR/ProfSpin.som" "$go" "$stop" >"$SP_TMP/vm.out" 2>&1 </dev/null &
    helper=$!
    for ((i = 0; i < 1000; i++)); do
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$bin")" ] && break
        kill -0 "$helper" 2>/dev/null || break
        sleep 0.01
    done
    if ! kill -0 "$helper" 2>/dev/null; then
        wait "$helper"
        st=$?
        kill -INT "$SP_TOOL_PID" 2>/dev/null
        wait "$SP_TOOL_PID"
        if [ "$st" = 125 ]; then skip "sqprof --every (PID reused)" "$(head -1 "$SP_TMP/vm.out")"
        else fail "sqprof --every (PID reused)" "the second VM did not start: status $st, $(head -3 "$SP_TMP/vm.out")"; fi
        return
    fi
    sp_wait_count "$err" "^sqprof: PID $pid (" 2 "$SP_TOOL_PID" || bad="$bad second-not-added"
    touch "$stop"
    wait "$helper"
    sp_wait_count "$err" "^sqprof: PID $pid has exited: forgotten$" 2 "$SP_TOOL_PID" || bad="$bad not-forgotten-twice"
    kill -INT "$SP_TOOL_PID" 2>/dev/null
    wait "$SP_TOOL_PID"
    st=$?
    if [ "$st" = 0 ] && [ -z "$bad" ] && [ "$(grep -c "^sqprof: PID $pid (" "$err")" = 2 ] &&
        [ "$(grep -c "^sqprof: PID $pid has exited: forgotten$" "$err")" = 2 ]; then
        pass "sqprof --every, a PID reused: the new VM on the old one's PID is added, each forgotten once exited"
    else fail "sqprof --every (PID reused)" "status $st:$bad (PID $pid)
$(grep -v '^sqprof: wrote' "$err" | grep '^sqprof: PID' | head -8)"; fi
    rm -rf "${bin%/*}"
}

# ---- Every VM of a binary --------------------------------------------------------

sp_systemwide() {
    local pid1 pid2 st roots
    cp "$VM" "$SP_TMP/sqvm"
    if ! sp_start_vm -- ProfSpin "$SP_TMP/sqvm"; then
        fail "sqprof/system-wide" "the VM did not start"
        sp_stop
        return
    fi
    pid1=$SP_VM_PID
    local go1=$SP_GO stop1=$SP_STOP
    sp_go
    if ! sp_start_vm -- ProfSpin "$SP_TMP/sqvm"; then
        fail "sqprof/system-wide" "the second VM did not start"
        touch "$go1" "$stop1"
        sp_stop
        return
    fi
    pid2=$SP_VM_PID
    sp_go
    sp_start_tool wide --vm "$SP_TMP/sqvm" -P -F 999 -d 1 -f
    wait "$SP_TOOL_PID"
    st=$?
    touch "$go1" "$stop1"
    wait "$pid1" 2>/dev/null
    sp_stop
    roots=$(sed -E 's/;.*//' "$SP_TMP/wide.out" | sort -u | tr '\n' ' ')
    if [ "$st" = 0 ] && [ "$roots" = "$(printf '[pid %s] ' $(printf '%s\n' "$pid1" "$pid2" | sort))" ] &&
        ! grep -v -F ";$SP_SPIN_CHAIN" "$SP_TMP/wide.out" | grep -q . &&
        grep -q "^Sampling Smalltalk stacks of every process running $SP_TMP/sqvm (2 now) at 999 Hz" "$SP_TMP/wide.err"; then
        pass "sqprof/system-wide --vm -P: both VMs of the binary, one root each, nothing else"
    else fail "sqprof/system-wide" "status $st; roots '$roots' (want $pid1 $pid2)
$(head -5 "$SP_TMP/wide.out" "$SP_TMP/wide.err")"; fi
}

# ---- The command line and its errors --------------------------------------------

sp_errors() {
    local out st dead sleeper i

    out=$("$SP_TOOL" --help 2>&1); st=$?
    if [ "$st" = 0 ] && [[ "$out" == *"USAGE: sqprof"* ]] && [[ "$out" == *"EXAMPLES:"* ]] &&
        [[ "$out" == *"--max-depth"* ]] && [[ "$("$SP_TOOL" --version)" == "sqprof (sqvm tools) "[0-9]* ]]; then
        pass "sqprof --help (USAGE, EXAMPLES) and --version"
    else fail "sqprof --help" "status $st: $(echo "$out" | head -3)"; fi

    local st2
    "$SP_TOOL" --max-depth 0 -p 1 >/dev/null 2>&1; st=$?
    out=$("$SP_TOOL" -f -j -p 1 2>&1); st2=$?
    if [ "$st" = 2 ] && [ "$st2" = 2 ] && [[ "$out" == *"choose one"* ]]; then
        pass "sqprof bad usage: exit 2 with a message"
    else fail "sqprof bad usage" "status $st, $st2: $out"; fi

    if command -v setpriv >/dev/null; then
        out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SP_TOOL" -p 1 -d 1 2>&1); st=$?
        if [ "$st" = 1 ] && [[ "$out" == "sqprof: needs root"* ]]; then
            pass "sqprof not root: exit 1, 'needs root'"
        else fail "sqprof not root" "status $st: $out"; fi
    else
        skip "sqprof not root" "no setpriv"
    fi

    true &
    dead=$!
    wait "$dead"
    out=$("$SP_TOOL" -p "$dead" -d 1 2>&1); st=$?
    if [ "$st" = 1 ] && [ "$out" = "sqprof: PID $dead: no such process" ]; then
        pass "sqprof dead PID: exit 1, 'no such process'"
    else fail "sqprof dead PID" "status $st: $out"; fi

    sleep 30 &
    sleeper=$!
    # until the shell's child has exec'ed sleep (before, its executable is the shell's)
    for ((i = 0; i < 500; i++)); do
        [ "$(readlink "/proc/$sleeper/exe")" = "$(readlink -f "$(command -v sleep)")" ] && break
        sleep 0.01
    done
    out=$("$SP_TOOL" -p "$sleeper" -d 1 2>&1); st=$?
    kill "$sleeper" 2>/dev/null
    wait "$sleeper" 2>/dev/null
    if [ "$st" = 1 ] && [ "$out" = "sqprof: PID $sleeper ($(readlink -f "$(command -v sleep)")): not an sqvm process: its executable has no sqvm_debug_offsets symbol" ]; then
        pass "sqprof PID not an sqvm: exit 1, 'no sqvm_debug_offsets symbol'"
    else fail "sqprof PID not an sqvm" "status $st: $out"; fi

    printf 'a;b 3\nnot folded\n' >"$SP_TMP/bad.folded"
    out=$("$SP_TOOL" -i "$SP_TMP/bad.folded" 2>&1); st=$?
    if [ "$st" = 1 ] && [ "$out" = "sqprof: $SP_TMP/bad.folded:2: not a folded stack (\"frame;frame;frame count\")" ]; then
        pass "sqprof -i malformed input: exit 1, file:line"
    else fail "sqprof -i malformed" "status $st: $out"; fi

    # Ctrl-C: the report, and exit 0.
    if sp_start_vm -- ProfSpin; then
        sp_go
        sp_start_tool sigint -p "$SP_VM_PID" -F 999
        if sp_wait_sampling sigint; then
            sleep 0.3
            kill -INT "$SP_TOOL_PID"
        fi
        wait "$SP_TOOL_PID"
        st=$?
        sp_stop
        if [ "$st" = 0 ] && grep -q '^PID [0-9]*, CPU at 999 Hz for [0-9.]* s: [1-9][0-9]* samples' "$SP_TMP/sigint.out" &&
            grep -q ' ProfSpin>>hot$' "$SP_TMP/sigint.out"; then
            pass "sqprof Ctrl-C: prints the profile, exit 0"
        else fail "sqprof Ctrl-C" "status $st: $(cat "$SP_TMP/sigint.out" "$SP_TMP/sigint.err" | head -8)"; fi
    else
        fail "sqprof Ctrl-C" "the VM did not start"
        sp_stop
    fi
}

# ---- --wall: every green process, whatever its state -----------------------------

# ProfWall for 3 s at 99 Hz: every tick samples each of its three processes once, so
# each has exactly as many samples as the tool took ticks (the tool says how many), and
# a tick is taken about every 10 ms (ticks the tool was late for are counted, not
# sampled: at least 90% of 3F). waiter only waits on a Semaphore: all its samples in
# state semaphore, at waitOn:; worker only computes: running or ready, under work:;
# main waits on its Delays, in pause.
sp_wall() {
    local st n ticks waiter worker main other pr raw top got
    if ! sp_start_vm -- ProfWall; then
        fail "sqprof --wall" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    sp_start_tool wall -p "$SP_VM_PID" --wall -F 99 -d 3 -f --pprof "$SP_TMP/wall.pb.gz" \
        --svg "$SP_TMP/wall.svg" --speedscope "$SP_TMP/wall.speedscope.json"
    wait "$SP_TOOL_PID"
    st=$?
    sp_start_tool wall-t -p "$SP_VM_PID" --wall -d 300ms -n 0
    wait "$SP_TOOL_PID"
    local st_t=$?
    rm -rf "$SP_TMP/wall-every"
    mkdir -p "$SP_TMP/wall-every"
    sp_start_tool wall-e -p "$SP_VM_PID" --wall --every 1s --out "$SP_TMP/wall-every" -d 2
    wait "$SP_TOOL_PID"
    local st_e=$?
    sp_stop
    sum() { awk -v re="$1" '$0 ~ re { s += $NF } END { print s + 0 }' "$SP_TMP/wall.out"; }
    n=$(sum '.')
    waiter=$(sum '^waiter;semaphore;\\[\\] in ProfWall>>run:;ProfWall>>waitOn: [0-9]+$')
    worker=$(sum '^worker;(running|ready);\\[\\] in ProfWall>>run:;ProfWall>>work:(;ProfWall>>spin)? [0-9]+$')
    main=$(sum '^main;delay;System>>initialize:;ProfWall>>run:;ProfWall>>pause [0-9]+$')
    # main between its Delays: looking for the stop file (run:), or about to wait (pause,
    # making its Delay: Delay class>>forMilliseconds:, Delay>>setMilliseconds:)
    local awake incons
    awake=$(sum '^main;(running|ready);System>>initialize:;ProfWall>>run:(;ProfWall>>pause(;Delay( class)?>>[^; ]+)*)? [0-9]+$')
    other=$((n - waiter - worker - main - awake))
    ticks=$(sed -n 's/^sqprof: wall clock, \([0-9]*\) ticks.*/\1/p' "$SP_TMP/wall.err")
    incons=$(sed -n 's/^sqprof: [0-9]* samples, .* lost, \([0-9]*\) inconsistent$/\1/p' "$SP_TMP/wall.err")
    # Every tick samples each of the three processes once: the samples and the ones
    # dropped as inconsistent (the running worker's stack read mid-call) are 3 a tick.
    if [ "$st" = 0 ] && [ -n "$ticks" ] && [ "$ticks" -ge 267 ] && [ "$ticks" -le 300 ] &&
        [ $((n + incons)) = $((3 * ticks)) ] && [ "$waiter" = "$ticks" ] && [ "$other" = 0 ] &&
        [ $((worker + incons)) -ge $((ticks - 2)) ] && [ "$main" -ge $((ticks * 9 / 10)) ]; then
        pass "sqprof --wall -f: $ticks ticks in 3 s at 99 Hz, 3 samples each ($n, $incons inconsistent); waiter $waiter, all semaphore at waitOn:; worker $worker running/ready under work:; main $main in delay at pause, $awake awake in run:"
    else fail "sqprof --wall -f" "status $st, ticks '$ticks', $n samples, $incons inconsistent: waiter $waiter worker $worker main $main awake $awake other $other
$(cat "$SP_TMP/wall.out" "$SP_TMP/wall.err" | head -20)"; fi

    # The table: samples by process and state, each a third of them.
    pr=$(awk '/^ +SAMPLES +% +STATE +PROCESS$/ { on = 1; next } on && NF == 0 { exit }
        on && NF == 4 { printf "%s/%s ", $3, $4 }' "$SP_TMP/wall-t.out")
    if [ "$st_t" = 0 ] && [[ "$pr" == "delay/main semaphore/waiter "*"/worker "* ]] &&
        grep -q '^PID [0-9]*, wall clock at 99 Hz for [0-9.]* s: [0-9]* ticks, [0-9]* samples of every process' "$SP_TMP/wall-t.out"; then
        pass "sqprof --wall table: samples by process and state ($pr)"
    else fail "sqprof --wall table" "status $st_t, rows '$pr': $(head -12 "$SP_TMP/wall-t.out")"; fi

    # The flame graph and speedscope carry the same two root frames.
    if [ -z "$(sp_xml_ok "$SP_TMP/wall.svg")" ] && grep -q '<title>waiter (' "$SP_TMP/wall.svg" &&
        grep -q '<title>semaphore (' "$SP_TMP/wall.svg" && grep -q 'Wall-Clock Flame Graph' "$SP_TMP/wall.svg" &&
        [ "$(jq -r '[.shared.frames[].name] | (index("waiter") != null and index("semaphore") != null and index("delay") != null)' "$SP_TMP/wall.speedscope.json")" = true ]; then
        pass "sqprof --wall --svg, --speedscope: the process and state frames at the root"
    else fail "sqprof --wall --svg/--speedscope" "$(sp_xml_ok "$SP_TMP/wall.svg"; head -c 300 "$SP_TMP/wall.speedscope.json")"; fi

    # pprof, read by go tool pprof: sample type wall, labels process and state on every
    # sample, waiter's samples all at waitOn: in state semaphore; -top: a third each.
    if sp_have_go; then
        raw=$(sp_pprof_raw "$SP_TMP/wall.pb.gz")
        top=$(sp_pprof_top "$SP_TMP/wall.pb.gz")
        got=$(jq -r '
            [(.types | join(" ")), .periodtype, .period,
             (.samples | all(.labels.process != null and .labels.state != null and
                             .stack[-1] == .labels.process and .stack[-2] == .labels.state)),
             ([.samples[] | select(.labels.process == "waiter") | select(.labels.state == "semaphore" and .stack[0] == "ProfWall>>waitOn:") | .values[0]] | add),
             ([.samples[] | select(.labels.process == "worker") | select(.labels.state != "running" and .labels.state != "ready")] | length)]
            | map(tostring) | join(" | ")' <<<"$raw" 2>&1)
        if [ "$st" = 0 ] && [ "$got" = "samples/count wall/nanoseconds | wall nanoseconds | 10101010 | true | $waiter | 0" ] &&
            sp_between "${top%%%*}" 30 37; then
            pass "sqprof --wall --pprof, read by go tool pprof: wall/nanoseconds, labels process and state, waiter's $waiter samples semaphore at waitOn:, -top: ${top}"
        else fail "sqprof --wall --pprof (go tool pprof)" "'$got' (waiter $waiter), top '$top': $(head -c 600 <<<"$raw")"; fi
        # --every: each period's file is a wall profile too.
        local f files=0 good=0
        for f in "$SP_TMP"/wall-every/*.pb.gz; do
            [ -f "$f" ] || continue
            files=$((files + 1))
            [ "$(sp_pprof_raw "$f" | jq -r '[(.types | join(" ")), (.samples | length > 0 and all(.labels.state != null))] | map(tostring) | join(" ")' 2>&1)" = \
                "samples/count wall/nanoseconds true" ] && good=$((good + 1))
        done
        if [ "$st_e" = 0 ] && [ "$files" -ge 2 ] && [ "$good" = "$files" ]; then
            pass "sqprof --wall --every 1s: $files files, each of type wall with a state on every sample"
        else fail "sqprof --wall --every" "status $st_e, $good of $files files good: $(ls "$SP_TMP/wall-every"; head -3 "$SP_TMP/wall-e.err")"; fi
    else
        skip "sqprof --wall --pprof (go tool pprof)" "go is not installed (Debian's golang-go: scripts/deps.sh)"
    fi
}

# ---- pprof's trace labels ---------------------------------------------------------

SP_TRACE_ONE=0af7651916cd43dd8448eb211c80319c
SP_TRACE_TWO=4bf92f3577b34da6a3ce929d0e0e4736

# The values of one label that `go tool pprof -tags` lists, sorted, on one line.
sp_pprof_tag_values() { # file label
    go tool pprof -tags "$1" 2>/dev/null | awk -v k="$2" '$1 == k ":" && $2 == "Total" { on = 1; next }
        on && NF == 0 { exit } on { print $NF }' | sort | tr '\n' ' '
}

# What must hold of every sample of a ProfTrace profile (pprofraw.py's JSON), as
# "total bad spinBad spinPlain spinOutside": a sample of trace one has traceOne on its
# stack and one's parent, and (if $strict) every sample in spinOne is of trace one (and
# so for two); no sample in spinBad (a malformed traceparent), spinPlain (none) or
# spinOutside (no request) has a trace, a span is 16 lower-case hex digits, and there is
# no other trace.
SP_TRACE_JQ='def has($m): (.stack | index($m)) != null;
    def n: [.[].values[0]] | add // 0;
    .samples as $s |
    [($s | n),
     ($s | map(select(
        (.labels.trace_id == $one and ((has("ProfTrace>>traceOne") | not) or .labels.parent_span_id != "b7ad6b7169203331")) or
        (.labels.trace_id == $two and ((has("ProfTrace>>traceTwo") | not) or .labels.parent_span_id != "00f067aa0ba902b7")) or
        ($strict == "1" and has("ProfTrace>>spinOne") and .labels.trace_id != $one) or
        ($strict == "1" and has("ProfTrace>>spinTwo") and .labels.trace_id != $two) or
        ((has("ProfTrace>>spinBad") or has("ProfTrace>>spinPlain") or has("ProfTrace>>spinOutside")) and
         (.labels.trace_id != null or .labels.span_id != null or .labels.parent_span_id != null)) or
        (.labels.trace_id != null and (.labels.trace_id != $one and .labels.trace_id != $two)) or
        (.labels.trace_id != null and ((.labels.span_id | test("^[0-9a-f]{16}$")) | not)))) | n),
     ($s | map(select(has("ProfTrace>>spinBad"))) | n),
     ($s | map(select(has("ProfTrace>>spinPlain"))) | n),
     ($s | map(select(has("ProfTrace>>spinOutside"))) | n)] | map(tostring) | join(" ")'

# The samples -tagfocus trace_id=ID keeps, as "kept spin-in-them wrong": wrong counts
# those of another trace or without the request's method on the stack.
SP_TRACE_FOCUS_JQ='def has($m): (.stack | index($m)) != null;
    def n: [.[].values[0]] | add // 0;
    .samples as $s |
    [($s | n), ($s | map(select(has($spin))) | n),
     ($s | map(select(.labels.trace_id != $id or (has($req) | not))) | n)] | map(tostring) | join(" ")'

# Checks one ProfTrace pprof file with go tool pprof: the whole profile (SP_TRACE_JQ),
# what -tagfocus keeps of each trace, and what -tags lists. name: the case's name.
# strict 1: every sample in a trace's spin method has its trace (a CPU sample reads the
# VM's thread it interrupted: nothing changes under it). 0 (--wall, which reads the VM
# from another CPU while it runs): a sample whose walk a whole request began and ended
# during (the tool's thread preempted) has none, and a spin method's samples are at
# least those -tagfocus keeps; a label is still always the request's that was open.
sp_trace_check() { # name file status strict
    local name=$1 file=$2 st=$3 strict=$4 all total bad bad_n plain outside raw1 raw2 f1 f2 tags parents top1 top2
    local one_spin two_spin kept1 kept2 spin1 spin2 wrong1 wrong2
    all=$(sp_pprof_raw "$file")
    read -r total bad bad_n plain outside <<<"$(jq -r --arg one "$SP_TRACE_ONE" --arg two "$SP_TRACE_TWO" \
        --arg strict "$strict" "$SP_TRACE_JQ" <<<"$all" 2>&1)"
    one_spin=$(jq -r '[.samples[] | select(.stack | index("ProfTrace>>spinOne")) | .values[0]] | add // 0' <<<"$all")
    two_spin=$(jq -r '[.samples[] | select(.stack | index("ProfTrace>>spinTwo")) | .values[0]] | add // 0' <<<"$all")
    raw1=$(sp_pprof_raw -tagfocus "trace_id=$SP_TRACE_ONE" "$file")
    raw2=$(sp_pprof_raw -tagfocus "trace_id=$SP_TRACE_TWO" "$file")
    f1=$(jq -r --arg id "$SP_TRACE_ONE" --arg req "ProfTrace>>traceOne" --arg spin "ProfTrace>>spinOne" "$SP_TRACE_FOCUS_JQ" <<<"$raw1" 2>&1)
    f2=$(jq -r --arg id "$SP_TRACE_TWO" --arg req "ProfTrace>>traceTwo" --arg spin "ProfTrace>>spinTwo" "$SP_TRACE_FOCUS_JQ" <<<"$raw2" 2>&1)
    top1=$(go tool pprof -tagfocus "trace_id=$SP_TRACE_ONE" -top "$file" 2>/dev/null | awk '/^ *flat +flat%/ { getline; print $NF; exit }')
    top2=$(go tool pprof -tagfocus "trace_id=$SP_TRACE_TWO" -top "$file" 2>/dev/null | awk '/^ *flat +flat%/ { getline; print $NF; exit }')
    tags=$(sp_pprof_tag_values "$file" trace_id)
    parents=$(sp_pprof_tag_values "$file" parent_span_id)
    # -tagfocus keeps exactly the trace's samples: all of its spin method's (strict), no
    # other trace's, each with the request's method on its stack; the spin method leads -top.
    read -r kept1 spin1 wrong1 <<<"$f1"
    read -r kept2 spin2 wrong2 <<<"$f2"
    [ "$strict" = 1 ] || { one_spin=$spin1; two_spin=$spin2; }
    if [ "$st" = 0 ] && [ "$bad" = 0 ] && [ "$total" -gt 0 ] && [ "$bad_n" -gt 0 ] && [ "$plain" -gt 0 ] && [ "$outside" -gt 0 ] &&
        [ "$f1" = "$kept1 $one_spin 0" ] && [ "$kept1" -gt 0 ] && [ "$one_spin" -gt 0 ] &&
        [ "$f2" = "$kept2 $two_spin 0" ] && [ "$kept2" -gt 0 ] && [ "$two_spin" -gt 0 ] &&
        [ "$top1" = "ProfTrace>>spinOne" ] && [ "$top2" = "ProfTrace>>spinTwo" ] &&
        [ "$tags" = "$SP_TRACE_ONE $SP_TRACE_TWO " ] && [ "$parents" = "00f067aa0ba902b7 b7ad6b7169203331 " ]; then
        pass "$name: go tool pprof -tagfocus trace_id= keeps trace one's $kept1 samples ($one_spin in spinOne$([ "$strict" = 1 ] && echo ": all of them"), -top spinOne) and trace two's $kept2 ($two_spin in spinTwo); none of the $bad_n malformed-traceparent, $plain no-traceparent and $outside outside-any-request samples has a trace; -tags lists exactly the two trace ids and parents"
    else fail "$name" "status $st; total '$total' bad '$bad' malformed '$bad_n' plain '$plain' outside '$outside'; focus one '$f1' (spinOne $one_spin, top '$top1'), two '$f2' (spinTwo $two_spin, top '$top2'); trace_id tags '$tags', parents '$parents'
$(head -c 600 <<<"$all")"; fi
}

# Samples taken in a request with a W3C trace context carry pprof labels trace_id,
# span_id and parent_span_id; all other samples none (tests/sqprof/ProfTrace.som): a CPU
# profile, a wall-clock one (read from another CPU while the VM runs) and --every's
# files, at once on one VM.
sp_trace() {
    local st st_w st_e pid_c pid_w f tags=""
    if ! sp_have_go; then
        sp_no_go "sqprof --pprof trace labels (go tool pprof)"
        return
    fi
    if ! sp_start_vm -- ProfTrace; then
        fail "sqprof --pprof trace labels" "the VM did not start: $(head -5 "$SP_TMP/vm.out")"
        sp_stop
        return
    fi
    sp_go
    rm -rf "$SP_TMP/trace-every"
    mkdir -p "$SP_TMP/trace-every"
    sp_start_tool trace -p "$SP_VM_PID" -F 499 -d 2 -f --pprof "$SP_TMP/trace.pb.gz"
    pid_c=$SP_TOOL_PID
    sp_start_tool trace-w -p "$SP_VM_PID" --wall -F 199 -d 2 -f --pprof "$SP_TMP/trace-wall.pb.gz"
    pid_w=$SP_TOOL_PID
    sp_start_tool trace-e -p "$SP_VM_PID" -F 199 --every 1s --out "$SP_TMP/trace-every" -d 2
    wait "$pid_c"
    st=$?
    wait "$pid_w"
    st_w=$?
    wait "$SP_TOOL_PID"
    st_e=$?
    sp_stop
    sp_trace_check "sqprof --pprof trace labels" "$SP_TMP/trace.pb.gz" "$st" 1
    sp_trace_check "sqprof --wall --pprof trace labels" "$SP_TMP/trace-wall.pb.gz" "$st_w" 0
    # --every's files carry them too: the two traces, and nothing else.
    for f in "$SP_TMP"/trace-every/*.pb.gz; do
        [ -f "$f" ] && tags+=$(sp_pprof_tag_values "$f" trace_id)
    done
    tags=$(tr ' ' '\n' <<<"$tags" | sed '/^$/d' | sort -u | tr '\n' ' ')
    if [ "$st_e" = 0 ] && [ "$tags" = "$SP_TRACE_ONE $SP_TRACE_TWO " ]; then
        pass "sqprof --every: its files label samples with the two trace ids"
    else fail "sqprof --every trace labels" "status $st_e, trace_id tags '$tags': $(ls "$SP_TMP/trace-every"; head -3 "$SP_TMP/trace-e.err")"; fi
    # Labels are pprof's alone: folded stacks are as before, one line per stack.
    if [ -z "$(sed 's/ [0-9]*$//' "$SP_TMP/trace.out" | sort | uniq -d)" ] &&
        grep -q '^System>>initialize:;ProfTrace>>run:;ProfTrace>>traceOne;ProfTrace>>spinOne [0-9]*$' "$SP_TMP/trace.out"; then
        pass "sqprof -f with --pprof: folded stacks without labels, one line per stack"
    else fail "sqprof -f with --pprof (trace)" "$(sed 's/ [0-9]*$//' "$SP_TMP/trace.out" | sort | uniq -d | head -3; head -5 "$SP_TMP/trace.out")"; fi
}

sp_main() {
    mkdir -p "$SP_TMP"
    if [ "$(id -u)" != 0 ]; then
        skip "sqprof" "needs root (BPF, perf events)"
        return
    fi
    if ! make -s sqprof >"$SP_TMP/build.log" 2>&1; then
        fail "sqprof build" "$(tail -20 "$SP_TMP/build.log")"
        return
    fi
    sp_cpu
    sp_deep
    sp_long_names
    sp_gc
    sp_procs
    sp_alloc
    sp_every
    sp_every_churn
    sp_every_reuse
    sp_wall
    sp_trace
    sp_systemwide
    sp_errors
}

sp_main
