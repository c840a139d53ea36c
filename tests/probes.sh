# SPDX-License-Identifier: BSD-2-Clause
# tests/probes.sh - the squeak USDT provider: the ELF notes match probes/squeak.d, PROBES=0
# compiles them out, bpftrace sees exact event counts, the allocation sampler's estimate,
# and the debug offsets reproduce the VM's own backtrace. Sourced by tests/run.sh.

# The probes declared in squeak.d ("name argcount" lines, __ kept as in the ELF notes).
probes_declared() {
    tr '\n' ' ' <probes/squeak.d | sed 's|/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/||g' | tr ';' '\n' |
        sed -n 's/.*probe[[:space:]]\+\([a-z_]*\)(\(.*\)).*/\1 \2/p' |
        awk '{ name = $1; $1 = ""; n = split($0, a, ","); if ($0 ~ /^ *$/) n = 0; print name, n }' | sort
}

# The probes in the binary's .note.stapsdt ("name argcount"), provider squeak only.
probes_in_binary() {
    readelf -n "$1" 2>/dev/null | awk '
        /Provider:/ { prov = $2 }
        /Name:/ { name = $2 }
        /Semaphore:/ { sem = $2 }
        /Arguments:/ { if (prov == "squeak") { $1 = ""; print name, NF - 1, sem } }' |
        sort -u | awk '{ print $1, $2 }'
}

probe_contract_test() {
    local want got
    want=$(probes_declared)
    got=$(probes_in_binary "$VM")
    if [ -n "$want" ] && [ "$want" = "$got" ]; then pass "probes/contract ($(echo "$want" | wc -l) probes)"
    else fail "probes/contract" "$(diff <(echo "$want") <(echo "$got"))"; fi
    # every probe has a semaphore (an is-enabled guard)
    local nosem
    nosem=$(readelf -n "$VM" | awk '/Provider: squeak/ { p = 1 } /Name:/ { n = $2 } /Semaphore:/ { if (p && $2 ~ /^0x0+$/) print n; p = 0 }')
    if [ -z "$nosem" ]; then pass "probes/semaphores"; else fail "probes/semaphores" "without semaphore: $nosem"; fi
    # arguments in registers or on the stack: libbpf and bpftrace cannot read RIP-relative operands
    local rip
    rip=$(readelf -n "$VM" | awk '/Provider: squeak/ { p = 1 } /Name:/ { n = $2 } /Arguments:/ { if (p && /%rip/) print n; p = 0 }')
    if [ -z "$rip" ]; then pass "probes/no RIP-relative arguments"; else fail "probes/no RIP-relative arguments" "$rip"; fi
}

# The bytes at every squeak site of binary $1: "LOCATION HEXBYTES" lines, $2 bytes each.
site_bytes() {
    local loc
    for loc in $(readelf -n "$1" | awk '/Provider: squeak/ { p = 1 } p && /Location:/ { sub(",", "", $2); print $2; p = 0 }'); do
        echo "$loc $(objdump -d --start-address="$loc" --stop-address=$((loc + $2)) "$1" |
            awk -F'\t' '/^ *[0-9a-f]+:/ { printf "%s", $2 }' | tr -d ' ')"
    done
}

# x86-64: the sites are 5-byte nops (which the kernel can optimize into calls), and
# PROBE_NOP=1 builds the 1-byte nop sites of sys/sdt.h with the same notes.
probe_sites_test() {
    [ "$(uname -m)" = x86_64 ] || { skip "probes/5-byte nop sites" "not x86-64"; return; }
    local bad
    bad=$(site_bytes "$VM" 5 | awk '$2 != "0f1f440000"')
    if [ -z "$bad" ]; then pass "probes/every site is a 5-byte nop ($(site_bytes "$VM" 5 | wc -l) sites)"
    else fail "probes/every site is a 5-byte nop" "$bad"; fi
    if ! make -s PROBE_NOP=1 vm >"$TMP/nop1" 2>&1; then fail "probes/PROBE_NOP=1 build" "$(tail -5 "$TMP/nop1")"; return; fi
    bad=$(site_bytes build/nop1/sqvm 1 | awk '$2 != "90"')
    if [ -z "$bad" ] && [ "$(probes_in_binary build/nop1/sqvm)" = "$(probes_in_binary "$VM")" ]; then
        pass "probes/PROBE_NOP=1: 1-byte nop sites, the same notes"
    else fail "probes/PROBE_NOP=1: 1-byte nop sites, the same notes" "$bad"; fi
}

probes_compiled_out_test() {
    if ! make -s PROBES=0 vm >"$TMP/np" 2>&1; then fail "probes/PROBES=0 build" "$(tail -5 "$TMP/np")"; return; fi
    local n
    n=$(readelf -n build/noprobes/sqvm | grep -c 'Provider: squeak')
    if [ "$n" = 0 ]; then pass "probes/PROBES=0 has no probes"; else fail "probes/PROBES=0 has no probes" "$n notes"; fi
}

stackwalk_test() {
    local go="$TMP/sw.go" pid st out sq=build/tools/sqstack
    [ -x "$sq" ] || make -s "$sq" >/dev/null 2>&1
    "$VM" tests/probes/StackWalk.som "$go" 2>"$TMP/sw.vm" &
    pid=$!
    # the VM prints its backtrace before it waits: wait for that
    for _ in $(seq 200); do [ -s "$TMP/sw.vm" ] && break; sleep 0.02; done
    sleep 0.05
    "$sq" -p "$pid" >"$TMP/sw.out" 2>&1
    "$sq" -p "$pid" --nonblocking >"$TMP/sw.nb" 2>&1
    "$sq" -p "$pid" -j -n 2 >"$TMP/sw.json" 2>&1
    if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$sq" -p "$pid" 2>&1); st=$?
    fi
    touch "$go"
    wait "$pid"
    if [ -s "$TMP/sw.out" ] && diff "$TMP/sw.vm" "$TMP/sw.out" >"$TMP/sw.diff"; then pass "probes/sqstack reproduces the VM backtrace"
    else fail "probes/sqstack reproduces the VM backtrace" "$(cat "$TMP/sw.diff" "$TMP/sw.out")"; fi
    if [ -s "$TMP/sw.nb" ] && diff "$TMP/sw.vm" "$TMP/sw.nb" >"$TMP/sw.diff"; then pass "probes/sqstack --nonblocking reproduces it too"
    else fail "probes/sqstack --nonblocking reproduces it too" "$(cat "$TMP/sw.diff" "$TMP/sw.nb")"; fi
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["frames"]) == 2 and d["truncated"] and d["frames"][0]["name"] == "StackWalk>>inner:" and d["frames"][0]["line"] > 0, d' "$TMP/sw.json" 2>"$TMP/sw.err"
    then pass "probes/sqstack -j -n 2: two frames, truncated, names and lines"
    else fail "probes/sqstack -j -n 2" "$(cat "$TMP/sw.json" "$TMP/sw.err")"; fi
    if [ -n "${st:-}" ]; then
        if [ "$st" = 1 ] && [[ "$out" == *"Permission denied (reading another user's process needs root or CAP_SYS_PTRACE)"* ]]
        then pass "probes/sqstack as another user: a permission error, not 'not an sqvm'"
        else fail "probes/sqstack as another user" "status $st: $out"; fi
    fi
    out=$("$sq" -p 999999 2>&1); st=$?
    if [ "$st" = 1 ] && [ "$out" = "sqstack: PID 999999 does not exist" ]; then pass "probes/sqstack dead pid"
    else fail "probes/sqstack dead pid" "status $st: $out"; fi
    out=$("$sq" -p $$ 2>&1); st=$?
    if [ "$st" = 1 ] && [[ "$out" == *"not an sqvm process: its executable has no sqvm_debug_offsets symbol" ]]; then pass "probes/sqstack non-VM pid"
    else fail "probes/sqstack non-VM pid" "status $st: $out"; fi
    out=$("$sq" 2>&1); st=$?
    if [ "$st" = 2 ] && [[ "$out" == *"which process? give -p PID"* ]]; then pass "probes/sqstack without -p: usage error"
    else fail "probes/sqstack without -p" "status $st: $out"; fi
}

# bt_session NAME PROGRAM VM-ARGS...: runs "$VM" VM-ARGS... $TMP/NAME.go (the workload
# waits for its go file) under bpftrace -p with PROGRAM, whose probes name the VM as
# $BT_VM; lets the VM go once every probe is attached (BEGIN fires after "Attaching N
# probes..."), waits for it, ends bpftrace and leaves its output in $TMP/NAME.bt (the
# VM's in $TMP/NAME.vm). Answers 1, having skipped NAME, without root or bpftrace.
bt_session() {
    local name=$1 prog=$2 go="$TMP/$1.go" pid bt
    shift 2
    if ! command -v bpftrace >/dev/null || [ "$(id -u)" != 0 ]; then
        skip "probes/bpftrace $name" "needs root and bpftrace"
        return 1
    fi
    rm -f "$go"
    "$VM" "$@" "$go" >"$TMP/$name.vm" 2>&1 &
    pid=$!
    bpftrace -p "$pid" -e "BEGIN { printf(\"--ready--\\n\"); } $prog" >"$TMP/$name.bt" 2>&1 &
    bt=$!
    for _ in $(seq 600); do grep -q "^--ready--$" "$TMP/$name.bt" && break; sleep 0.05; done
    touch "$go"
    wait "$pid"
    bt_stop "$bt"
    return 0	# bpftrace's status is its output's business: the checks read it
}
# bt_stop PID: bpftrace -p exits when the VM does, printing its maps; a SIGINT only backs
# that up, repeated (bpftrace 0.17 can miss one), then SIGKILL, so that a stuck bpftrace
# fails the checks instead of hanging the tier
bt_stop() {
    local i
    for ((i = 0; i < 200; i++)); do
        kill -0 "$1" 2>/dev/null || break
        [ "$i" -ge 100 ] && [ $((i % 40)) = 0 ] && kill -INT "$1" 2>/dev/null
        sleep 0.05
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1"
}
BT_VM=$(readlink -f "$VM")

# A getter and a setter whose send sites cached them before the tracer attached
# (tests/probes/QuickSites.som; the sites' copies of the quick forms answer them in
# place, without a frame): once traced, each call fires method__entry and
# method__return, exactly as many as the calls made after the attach.
bpftrace_quick_sites_test() {
    if ! command -v bpftrace >/dev/null || [ "$(id -u)" != 0 ]; then
        skip "probes/bpftrace quick sites" "needs root and bpftrace"
        return 0
    fi
    local warm="$TMP/quick.warm" go="$TMP/quick.go" pid bt
    rm -f "$warm" "$go"
    "$VM" -cp tests/lang/support tests/probes/QuickSites.som "$warm" "$go" >"$TMP/quick.vm" 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -e "$warm" ] && break; sleep 0.05; done
    bpftrace -p "$pid" -e "BEGIN { printf(\"--ready--\\n\"); }
        usdt:$BT_VM:squeak:method__entry /str(arg1) == \"val\"/ { @getentry = count(); }
        usdt:$BT_VM:squeak:method__return /str(arg1) == \"val\"/ { @getreturn = count(); }
        usdt:$BT_VM:squeak:method__entry /str(arg1) == \"val:\"/ { @setentry = count(); }
        usdt:$BT_VM:squeak:method__return /str(arg1) == \"val:\"/ { @setreturn = count(); }" >"$TMP/quick.bt" 2>&1 &
    bt=$!
    for _ in $(seq 600); do grep -q "^--ready--$" "$TMP/quick.bt" && break; sleep 0.05; done
    touch "$go"
    wait "$pid"
    bt_stop "$bt"
    local out want
    out=$(cat "$TMP/quick.bt")
    # the last getter call (q val println) is the 18th after the attach; the last value set 13
    for want in '^@getentry: 18$' '^@getreturn: 18$' '^@setentry: 13$' '^@setreturn: 13$'; do
        if grep -qE "$want" <<<"$out" && [ "$(cat "$TMP/quick.vm")" = 13 ]; then pass "probes/quick sites $want"
        else fail "probes/quick sites $want" "$(grep -v WARNING <<<"$out" | head -10; head -5 "$TMP/quick.vm")"; fi
    done
}

# One bpftrace session over tests/probes/Counts.som: exact counts of every kind of event.
bpftrace_counts_test() {
    bt_session counts "
        usdt:$BT_VM:squeak:object__alloc /str(arg0) == \"TPoint\"/ { @alloc[str(arg0), str(arg2), str(arg3)] = count(); }
        usdt:$BT_VM:squeak:method__entry /str(arg1) == \"twentyThree\"/ { @entry = count(); }
        usdt:$BT_VM:squeak:method__return /str(arg1) == \"twentyThree\"/ { @return = count(); }
        usdt:$BT_VM:squeak:gc__full__begin { @fullbegin = count(); }
        usdt:$BT_VM:squeak:gc__full__end { @fullend = count(); }
        usdt:$BT_VM:squeak:gc__incremental__end { @young = count(); }
        usdt:$BT_VM:squeak:user__probe { printf(\"user %s %d\\n\", str(arg0), arg1); }
        usdt:$BT_VM:squeak:user__probe__str { printf(\"userstr %s %s\\n\", str(arg0), str(arg1)); }
        usdt:$BT_VM:squeak:method__dnu { @dnu[str(arg0), str(arg1)] = count(); }
        usdt:$BT_VM:squeak:object__alloc__sample { @weight[str(arg0)] = sum(arg4); @samples = count(); }
        usdt:$BT_VM:squeak:sample__batch {
            \$i = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$r = arg0 + \$i * 72;
                if (*(uint32 *)\$r == 19) {
                    @bweight[str(*(uint64 *)(\$r + 16))] = sum(*(uint64 *)(\$r + 48));
                    @bsamples[*(uint64 *)(\$r + 56)] = count();
                }
                \$i++;
            }
        }
        usdt:$BT_VM:squeak:object__alloc /str(arg0) == \"Array\" || str(arg0) == \"String\"/ { @bytes[str(arg0)] = sum(arg1); }
    " --young 200M --alloc-sample 64K -cp tests/lang/support tests/probes/Counts.som || return 0
    local out
    out=$(cat "$TMP/counts.bt")
    check_line() { # label regex
        if grep -qE "$2" <<<"$out"; then pass "probes/$1"; else fail "probes/$1" "no line matching: $2
$(grep -v WARNING <<<"$out" | head -30)"; fi
    }
    check_line "object__alloc 1009 TPoint in TPoint class>>x:y:" '^@alloc\[TPoint, TPoint class, x:y:\]: 1009$'
    check_line "method__entry 23" '^@entry: 23$'
    check_line "method__return 23" '^@return: 23$'
    check_line "gc__full__begin 7" '^@fullbegin: 7$'
    check_line "gc__full__end 7" '^@fullend: 7$'
    check_line "gc__incremental__end 11" '^@young: 11$'
    check_line "user__probe" '^user request-start 42$'
    check_line "user__probe__str" '^userstr request-end done$'
    check_line "method__dnu 3" '^@dnu\[Counts, frobnicate\]: 3$'
    # The sampler: the weights per class estimate the exact bytes within 10%.
    local exact est cls
    for cls in Array String; do
        exact=$(sed -n "s/^@bytes\[$cls\]: //p" <<<"$out")
        est=$(sed -n "s/^@weight\[$cls\]: //p" <<<"$out")
        if [ -n "$exact" ] && [ -n "$est" ] && awk -v e="$exact" -v s="$est" 'BEGIN { d = (s - e) / e; exit !(d < 0.10 && d > -0.10) }'; then
            pass "probes/alloc sample estimate $cls ($est vs $exact bytes)"
        else
            fail "probes/alloc sample estimate $cls" "estimate '$est' vs exact '$exact' bytes"
        fi
    done
    # sample__batch's records are the same samples: as many (all of main, process 1),
    # the same weights per class.
    local n bn bad=""
    n=$(sed -n 's/^@samples: //p' <<<"$out")
    bn=$(sed -n 's/^@bsamples\[1\]: //p' <<<"$out")
    [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" = "$bn" ] && [ "$(grep -c '^@bsamples\[' <<<"$out")" = 1 ] || bad="samples $n, records $bn"
    for cls in Array String; do
        [ "$(sed -n "s/^@weight\[$cls\]: //p" <<<"$out")" = "$(sed -n "s/^@bweight\[$cls\]: //p" <<<"$out")" ] || bad="$bad; $cls's weights differ"
    done
    if [ -z "$bad" ]; then pass "probes/sample__batch: the sampler's $n samples as records, the same weights"
    else fail "probes/sample__batch: the sampler's samples as records" "$bad
$(grep -E '^@(samples|bsamples|weight|bweight)' <<<"$out")"; fi
}

# exception__signal's note: three string arguments, with its semaphore (the contract
# test only compares the binary with squeak.d, which would agree without it).
probe_exception_note_test() {
    local got
    got=$(readelf -n "$VM" | awk '/Provider: squeak/ { p = 1; next } p && /Name:/ { n = $2 } p && /Semaphore:/ { s = $2 }
        p && /Arguments:/ { if (n == "exception__signal") { $1 = ""; print n, NF - 1, (s ~ /^0x0+$/ ? "no semaphore" : "semaphore") } p = 0 }' | sort -u)
    if [ "$got" = "exception__signal 3 semaphore" ]; then pass "probes/readelf -n lists exception__signal (3 arguments, a semaphore)"
    else fail "probes/readelf -n lists exception__signal (3 arguments, a semaphore)" "got: '$got'"; fi
}

# exception__signal over tests/probes/Exceptions.som: every signal fires once, handled
# or not, with its class and the method that signalled it (not the exception's own
# frames, nor its class's signal:): 29 BadTokens from Parser>>parse:, a ZeroDivide
# from 1/0 in a block of Exceptions>>divide, an unhandled Notification, and a
# Notification passed on by a handler, which signals it again from that handler.
bpftrace_exceptions_test() {
    local out want got
    bt_session exc "
        usdt:$BT_VM:squeak:exception__signal { @exc[str(arg0), str(arg1), str(arg2)] = count(); @total = count(); }
    " tests/probes/Exceptions.som || return 0
    out=$(cat "$TMP/exc.bt")
    want=$'@exc[BadToken, Parser, parse:]: 29\n@exc[Notification, Exceptions, notify]: 1\n@exc[Notification, Exceptions, passOn]: 2\n@exc[ZeroDivide, Exceptions, divide]: 1\n@total: 33'
    got=$(grep -E '^@(exc\[|total:)' <<<"$out" | LC_ALL=C sort)
    if [ "$got" = "$want" ] && [ "$(cat "$TMP/exc.vm")" = 29 ]; then
        pass "probes/exception__signal: 29 BadToken from Parser>>parse:, a ZeroDivide, an unhandled and a passed Notification (33)"
    else fail "probes/exception__signal" "want:
$want
got:
$got
$(grep -v WARNING <<<"$out" | head -20)
VM: $(head -5 "$TMP/exc.vm")"; fi
}

# io__wait/io__ready over tests/probes/IOCounts.som: exact counts per process, operation
# and outcome, the timeout's length, and process__ready's reason 4 after each. main's
# connect waits at most once: the loop may already have seen the socket writable when
# finishConnect asks (a poll between connect(2) and primWait, which the machine's timing
# decides), and then no wait fires. So its wait, its ready and reason 4 must agree.
bpftrace_io_counts_test() {
    local out cw
    bt_session io "
        usdt:$BT_VM:squeak:io__wait { @wait[str(arg1), arg3] = count(); @timeoutns[str(arg1), arg3] = sum(arg4); }
        usdt:$BT_VM:squeak:io__ready { @ready[str(arg1), arg3, arg4] = count(); }
        usdt:$BT_VM:squeak:process__ready /arg2 == 4/ { @ioready = count(); }
    " tests/probes/IOCounts.som || return 0
    out=$(cat "$TMP/io.bt")
    cw=$(sed -n 's/^@wait\[main, 3\]: //p' <<<"$out")
    cw=${cw:-0}
    local check label re
    for check in "io__wait: reader 23 reads|^@wait\[reader, 0\]: 23$" "io__wait: main 1 read|^@wait\[main, 0\]: 1$" \
                 "io__wait: acceptor 1 accept|^@wait\[acceptor, 2\]: 1$" \
                 "io__wait: timeoutns 5 ms|^@timeoutns\[main, 0\]: 5000000$" "io__wait: timeoutns 0|^@timeoutns\[reader, 0\]: 0$" \
                 "io__ready: reader 23 ready|^@ready\[reader, 0, 0\]: 23$" "io__ready: main 1 timed out|^@ready\[main, 0, 1\]: 1$" \
                 "io__ready: acceptor 1|^@ready\[acceptor, 2, 0\]: 1$" \
                 "process__ready reason 4: 25 + main's connect waits|^@ioready: $((25 + cw))$"; do
        label=${check%%|*}
        re=${check#*|}
        if grep -qE "$re" <<<"$out"; then pass "probes/$label"
        else fail "probes/$label" "no line matching $re (main's connect waits: $cw)
$(grep -v WARNING <<<"$out" | head -30)
VM: $(cat "$TMP/io.vm")"; fi
    done
    # main's connect: 0 or 1 wait, and as many connected readies (none when it did not wait)
    local cr
    cr=$(sed -n 's/^@ready\[main, 3, 0\]: //p' <<<"$out")
    if [ "$cw" -le 1 ] && [ "${cr:-0}" = "$cw" ] && ! grep -q '^@ready\[main, 3, 1\]' <<<"$out"; then
        pass "probes/io__wait, io__ready: main's connect waits at most once, then is ready as often"
    else
        fail "probes/io__wait, io__ready: main's connect" "waited $cw, connected ${cr:-0}
$(grep -v WARNING <<<"$out" | head -30)"
    fi
}

# tests/probes/Unwind.som under bpftrace: frames that exceptions and ensure: unwind fire
# method__return once each, at the depth of their entry (frames are keyed by address;
# those already live when the tracer attached have no entry, depth 0 in the map).
bpftrace_unwind_test() {
    local out
    bt_session unwind "
        usdt:$BT_VM:squeak:method__entry { @depth[arg3] = arg4; @entry[str(arg1)] = count(); }
        usdt:$BT_VM:squeak:block__entry { @depth[arg3] = arg4; }
        usdt:$BT_VM:squeak:method__return {
            if (@depth[arg3] != 0 && @depth[arg3] != arg4) { @mismatch = count(); }
            delete(@depth[arg3]);
            @return[str(arg1)] = count();
        }
        usdt:$BT_VM:squeak:block__return {
            if (@depth[arg3] != 0 && @depth[arg3] != arg4) { @mismatch = count(); }
            delete(@depth[arg3]);
        }
        END { clear(@depth); }
    " -cp tests/lang/support tests/probes/Unwind.som || return 0
    out=$(cat "$TMP/unwind.bt")
    local want
    for want in '^@entry\[leaveByReturn\]: 17$' '^@return\[leaveByReturn\]: 17$' '^@entry\[leaveBySignal\]: 19$' \
        '^@return\[leaveBySignal\]: 19$' '^@entry\[leaveByRetry:\]: 26$' '^@return\[leaveByRetry:\]: 26$' '^@entry\[cleanup\]: 53$' '^@return\[cleanup\]: 53$'; do
        if grep -qE "$want" <<<"$out"; then pass "probes/unwind $want"; else fail "probes/unwind $want" "$(grep -v WARNING <<<"$out" | head -20)"; fi
    done
    if ! grep -q "^@mismatch: 0$" <<<"$out"; then fail "probes/unwind: every return at its entry's depth" "$(grep mismatch <<<"$out")"
    else pass "probes/unwind: every return at its entry's depth"; fi
}

# request__begin/request__end over tests/probes/RequestCounts.som: exact counts per
# route, status and owning process; the ids of the ends are those of the begins; the
# worker's abandoned request ends before its process__exit.
bpftrace_request_counts_test() {
    local out
    bt_session req "
        usdt:$BT_VM:squeak:request__begin { @begin[str(arg1), arg2] = count(); @ids = sum(arg0); }
        usdt:$BT_VM:squeak:request__end { @end[str(arg1), arg2, (int32)arg3] = count(); @ids = sum(-arg0);
            if ((int32)arg3 == -1 && @exited == 0) { @abandoned_first = count(); } }
        usdt:$BT_VM:squeak:process__exit /str(arg1) == \"worker\"/ { @exited = 1; }
    " tests/probes/RequestCounts.som || return 0
    out=$(cat "$TMP/req.bt")
    local check label re
    for check in "request__begin: main 7 GET /a|^@begin\[GET /a, 1\]: 7$" "request__begin: main 3 POST /b|^@begin\[POST /b, 1\]: 3$" \
                 "request__begin: worker 2 GET /leak|^@begin\[GET /leak, 2\]: 2$" "request__begin: main 1 GET /open|^@begin\[GET /open, 1\]: 1$" \
                 "request__end: 7 GET /a 200|^@end\[GET /a, 1, 200\]: 7$" "request__end: 3 POST /b 503|^@end\[POST /b, 1, 503\]: 3$" \
                 "request__end: GET /leak 201|^@end\[GET /leak, 2, 201\]: 1$" "request__end: GET /leak -1 (its process ended)|^@end\[GET /leak, 2, -1\]: 1$" \
                 "request__end: GET /open -2 (the VM exited)|^@end\[GET /open, 1, -2\]: 1$" \
                 "request__end: the abandoned one before process__exit|^@abandoned_first: 1$" \
                 "request__end: the ids of the begins|^@ids: 0$"; do
        label=${check%%|*}
        re=${check#*|}
        if grep -qE "$re" <<<"$out"; then pass "probes/$label"
        else fail "probes/$label" "no line matching $re
$(grep -v WARNING <<<"$out" | head -30)
VM: $(cat "$TMP/req.vm")"; fi
    done
}

# W3C trace context over tests/probes/RequestTrace.som: request__trace for the four
# requests whose traceparent is valid, with their trace id, parent and a span of their
# own (never 0, no two alike), none for the malformed ones; in req__batch, each traced
# request's SQ_EV_REQUEST_TRACE (18) right before its run (17) or begin (13) record,
# with the trace flags in arg.
bpftrace_request_trace_test() {
    local out want got
    bt_session reqtrace "
        usdt:$BT_VM:squeak:request__trace { printf(\"trace %d %lx %lx %lx\\n\", arg0, arg1, arg2, arg3);
            @spans[arg4] = count(); if (arg4 == 0) { @zero = count(); } }
    " tests/probes/RequestTrace.som || return 0
    out=$(cat "$TMP/reqtrace.bt")
    want=$'trace 1 4bf92f3577b34da6 a3ce929d0e0e4736 f067aa0ba902b7
trace 2 4bf92f3577b34da6 a3ce929d0e0e4736 f067aa0ba902b7
trace 3 4bf92f3577b34da6 a3ce929d0e0e4736 a1
trace 4 4bf92f3577b34da6 a3ce929d0e0e4736 b2'
    got=$(grep '^trace ' <<<"$out")
    if [ "$got" = "$want" ] && [ "$(grep -c '^@spans\[' <<<"$out")" = 4 ] && ! grep -q '^@zero: [1-9]' <<<"$out"; then
        pass "probes/request__trace: the 4 valid traceparents, their ids, 4 distinct spans; none for the malformed"
    else fail "probes/request__trace: the 4 valid traceparents" "want:
$want
got:
$(grep -v WARNING <<<"$out" | head -20)"; fi
    bt_session reqtracebatch "
        usdt:$BT_VM:squeak:req__batch {
            \$i = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$r = arg0 + \$i * 72;
                \$k = *(uint32 *)\$r;
                if (\$k == 18) {
                    printf(\"18 %d %lx %lx %lx %d\\n\", *(uint64 *)(\$r + 16), *(uint64 *)(\$r + 24), *(uint64 *)(\$r + 32),
                           *(uint64 *)(\$r + 40), *(uint32 *)(\$r + 4));
                } else if (\$k == 13 || \$k == 14 || \$k == 17) {
                    printf(\"%d %d\\n\", \$k, *(uint64 *)(\$r + 16));
                }
                \$i++;
            }
        }
    " tests/probes/RequestTrace.som || return 0
    want=$'18 1 4bf92f3577b34da6 a3ce929d0e0e4736 f067aa0ba902b7 1
17 1
18 2 4bf92f3577b34da6 a3ce929d0e0e4736 f067aa0ba902b7 1
17 2
18 3 4bf92f3577b34da6 a3ce929d0e0e4736 a1 0
13 3
14 3
18 4 4bf92f3577b34da6 a3ce929d0e0e4736 b2 1
17 4
17 5
17 6
17 7'
    got=$(grep -E '^1[3478] ' "$TMP/reqtracebatch.bt")
    if [ "$got" = "$want" ]; then pass "probes/req__batch: each traced request's trace record right before its run or begin"
    else fail "probes/req__batch: the trace records" "want:
$want
got:
$got
$(grep -v WARNING "$TMP/reqtracebatch.bt" | head -10)"; fi
}

# req__batch over the same workload: its records by kind and process (a request's
# records by its owner, req.process at offset 32; the others' by process.id at 16),
# exactly: a request that ends in the run that began it is one record (17: main's 7
# GET /a and the GET /open the VM's exit ends, worker's two, the second ended by its
# exit), the others a begin and an end
# (main's POST /b: a 1 ms Delay each); of the scheduler's, only main's waits, readies and
# activations inside those; none of main's waits outside a request (its start-up
# Delays, done wait, the yield), none of worker's (it never waits), no create or exit.
bpftrace_req_batch_test() {
    local out want got
    bt_session reqbatch "
        usdt:$BT_VM:squeak:req__batch {
            \$i = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$r = arg0 + \$i * 72;
                \$k = *(uint32 *)\$r;
                \$id = (\$k == 13 || \$k == 14 || \$k == 17) ? *(uint64 *)(\$r + 32) : *(uint64 *)(\$r + 16);
                @r[\$k, \$id] = count();
                \$i++;
            }
        }
    " tests/probes/RequestCounts.som || return 0
    out=$(cat "$TMP/reqbatch.bt")
    want=$'@r[13, 1]: 3\n@r[14, 1]: 3\n@r[17, 1]: 8\n@r[17, 2]: 2\n@r[6, 1]: 3\n@r[7, 1]: 3\n@r[8, 1]: 3'
    got=$(grep '^@r\[' <<<"$out" | LC_ALL=C sort)
    if [ "$got" = "$want" ]; then pass "probes/req__batch: the requests' records, and main's inside them only"
    else fail "probes/req__batch: the requests' records, and main's inside them only" "want:
$want
got:
$got
$(grep -v WARNING <<<"$out" | head -20)"; fi
}

# The record ring (ring__records, never fires) beside sched__batch, over the same workload.
# The VM copies a batch into its ring right after the batch probes fire, so each
# sched__batch hit (and vm__exit, after the last flush) finds the batch before it in the
# ring's newest slot, if the ring was on for it (bpftrace may attach sched__batch first):
# every slot the ring holds must be that batch record for record (as many records, the
# same kinds and times: a sum of both over every record); the slots hold the 16 request
# records and the processes' names, and the switches never fire. bpftrace's uaddr() does
# not relocate a PIE's symbols, so the ring is found from the batch buffer's address
# (sched__batch's records: sq_batch.rec, 32 bytes into sq_batch) and the two symbols'
# distance.
bpftrace_ring_test() {
    local out got prog slot delta b r
    b=$(nm "$BT_VM" | awk '$3 == "sq_batch" { print $1 }')
    r=$(nm "$BT_VM" | awk '$3 == "sq_record_ring" { print $1 }')
    [ -n "$b" ] && [ -n "$r" ] || { fail "probes/ring__records" "no sq_batch or sq_record_ring in $BT_VM's symbols"; return 0; }
    delta=$((16#$r - 16#$b - 32))
    # probes/record_ring.h: head at 16, slots from 64, each 19,096 bytes (n at 16, nnames
    # at 20, records from 664); a record's kind at 0, its time at 8
    slot='
        $head = *(uint64 *)($ring + 16);
        if ($head > @last_head) {
            $slot = $ring + 64 + (($head - 1) % 256) * 19096;
            $n = (uint64)*(uint32 *)($slot + 16);
            @ring_names = sum(*(uint32 *)($slot + 20));
            $i = (uint64)0;
            $c = (uint64)0;
            while ($i < $n && $i < 256) {
                $k = *(uint32 *)($slot + 664 + $i * 72);
                $c += $k + *(uint64 *)($slot + 664 + $i * 72 + 8);
                if ($k == 13 || $k == 14 || $k == 17) { @req[$k] = count(); }
                $i++;
            }
            if ($c == @prev_sum && $n == @prev_n) { @same = count(); } else { @differ = count(); }
        }
        @last_head = $head;'
    prog="
        usdt:$BT_VM:squeak:req__records, usdt:$BT_VM:squeak:ring__records { @fired = count(); }
        usdt:$BT_VM:squeak:sched__batch {
            \$ring = arg0 + $delta;
            @ring_at = \$ring;
            $slot
            \$i = (uint64)0;
            \$c = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$c += *(uint32 *)(arg0 + \$i * 72) + *(uint64 *)(arg0 + \$i * 72 + 8);
                \$i++;
            }
            @prev_sum = \$c;
            @prev_n = arg1;
            @batches = count();
        }
        usdt:$BT_VM:squeak:vm__exit {
            \$ring = @ring_at;
            $slot
        }"
    bt_session ring "$prog" tests/probes/RequestCounts.som || return 0
    out=$(cat "$TMP/ring.bt")
    val() { awk -v k="$1:" '$1 == k { print $2 }' <<<"$out"; }
    got="slots=$(val @last_head) same=$(val @same) differ=$(val @differ) req=$(grep -E '^@req\[' <<<"$out" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//') fired=$(val @fired)"
    if [[ $got =~ ^slots=([1-9][0-9]*)\ same=([0-9]+)\ differ=0?\ req=@req\[13\]:\ 3\ @req\[14\]:\ 3\ @req\[17\]:\ 10\ fired=0?$ ]] &&
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "$(val @ring_names)" -ge 1 ] 2>/dev/null; then
        pass "probes/ring__records: each of the record ring's ${BASH_REMATCH[1]} slots holds its batch record for record (of $(val @batches) sched__batch was handed), the 16 request records among them, and $(val @ring_names) process names"
    else fail "probes/ring__records" "got: $got
$(grep -v WARNING <<<"$out" | head -16)"; fi
}

# The record switch req__records (never fires) with sched__batch, over the same workload:
# sched__batch's batches hold exactly req__batch's request records (3 begins, 3 ends, 10
# whole runs) and req__records never fires; sched__batch alone holds none of them.
bpftrace_req_records_test() {
    local out got prog
    prog="
        usdt:$BT_VM:squeak:sched__batch {
            \$i = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$k = *(uint32 *)(arg0 + \$i * 72);
                if (\$k == 13 || \$k == 14 || \$k == 17) { @req[\$k] = count(); }
                \$i++;
            }
        }"
    bt_session reqrecords "$prog usdt:$BT_VM:squeak:req__records { @fired = count(); }" tests/probes/RequestCounts.som || return 0
    out=$(cat "$TMP/reqrecords.bt")
    got=$(grep -E '^@(req\[|fired)' <<<"$out" | LC_ALL=C sort | tr '\n' ' ')
    if [ "$got" = "@fired: 0 @req[13]: 3 @req[14]: 3 @req[17]: 10 " ] || [ "$got" = "@req[13]: 3 @req[14]: 3 @req[17]: 10 " ]; then
        pass "probes/req__records: sched__batch's batches hold the 16 request records, and the switch never fires"
    else fail "probes/req__records" "got: $got
$(grep -v WARNING <<<"$out" | head -10)"; fi
    bt_session schedonly "$prog" tests/probes/RequestCounts.som || return 0
    got=$(grep -cE '^@req\[' "$TMP/schedonly.bt")
    if [ "$got" = 0 ] && grep -q '^--ready--$' "$TMP/schedonly.bt"; then pass "probes/sched__batch alone: no request records"
    else fail "probes/sched__batch alone: no request records" "$(grep -v WARNING "$TMP/schedonly.bt" | head -10)"; fi
}

# A request's begin that req__batch held back when its tracer left: the request ends with
# nothing attached, and a later tracer must see only its own requests (the VM once wrote
# the ended one's begin at the next begin, and kept a pointer to its process).
bpftrace_req_held_detach_test() {
    local d="$TMP/held" vm bt out
    if ! command -v bpftrace >/dev/null || [ "$(id -u)" != 0 ]; then
        skip "probes/req__batch held begin after detach" "needs root and bpftrace"
        return
    fi
    mkdir -p "$d"
    "$VM" -cp tests/probes tests/probes/RequestHeld.som "$d/go" "$d/detached" "$d/again" >"$d/vm" 2>&1 &
    vm=$!
    # held_session NAME PROGRAM: a bpftrace on the VM, once it is ready
    held_session() {
        bpftrace -p "$vm" -e "BEGIN { printf(\"--ready--\\n\"); } $2" >"$d/$1" 2>&1 &
        bt=$!
        for _ in $(seq 600); do grep -q "^--ready--$" "$d/$1" && break; sleep 0.05; done
    }
    held_session first "usdt:$BT_VM:squeak:req__batch { @n = count(); }"
    touch "$d/go"
    for _ in $(seq 600); do grep -q '^held$' "$d/vm" && break; sleep 0.05; done
    end_bg "$bt" 10 INT
    touch "$d/detached"
    for _ in $(seq 600); do grep -q '^ended$' "$d/vm" && break; sleep 0.05; done
    held_session second "
        usdt:$BT_VM:squeak:req__batch {
            \$i = (uint64)0;
            while (\$i < arg1 && \$i < 256) {
                \$r = arg0 + \$i * 72;
                printf(\"rec %d %d\\n\", *(uint32 *)\$r, *(uint64 *)(\$r + 16));
                \$i++;
            }
        }"
    touch "$d/again"
    wait "$vm"
    end_bg "$bt" 10
    out=$(grep '^rec ' "$d/second")
    if [ "$out" = "rec 17 2" ]; then pass "probes/req__batch held begin after detach"
    else fail "probes/req__batch held begin after detach" "want: rec 17 2 (the second request, whole)
got: $out
VM: $(cat "$d/vm")
$(grep -v WARNING "$d/second" | head -10)"; fi
}

probe_contract_test
probe_sites_test
probes_compiled_out_test
stackwalk_test
probe_exception_note_test
bpftrace_counts_test
bpftrace_quick_sites_test
bpftrace_exceptions_test
bpftrace_io_counts_test
bpftrace_unwind_test
bpftrace_request_counts_test
bpftrace_req_batch_test
bpftrace_req_records_test
bpftrace_ring_test
bpftrace_request_trace_test
bpftrace_req_held_detach_test
