# SPDX-License-Identifier: BSD-2-Clause
# tests/perfetto.sh - sqflow --format=perfetto (tools/sqflow_perfetto.c) against the real
# VM: tests/perfetto/PerfettoFlow.som, whose calls and process switches are known in
# advance, traced once as Chrome JSON and once as Perfetto protobuf. The protobuf must
# decode with protoc against tools/perfetto/trace_subset.proto, hold the same slices,
# names and tracks as the JSON, a flow for each of the 14 process switches, and be at
# most a third of its size. Sourced by tests/run.sh (uses its pass/fail/skip, start_bg,
# wait_line, $VM and $TMP). Needs root, jq and protoc (scripts/deps.sh installs them).

PF_TOOLS=build/tools
PF_DIR=tests/perfetto
PF_TMP="$TMP/perfetto"
PF_TIMEOUT=60
PF_PROTO=tools/perfetto/trace_subset.proto
PF_LONG=PerfettoFlow\>\>aSelectorLongEnoughThatTheCallsNameNeedsAProtobufLengthOfTwoBytesYetWithinTheHundredAndTwentySevenBytesTheProbesKeep

# pf_trace FORMAT OUT WORKLOAD [SQFLOW ARGS...]: the workload waiting for its go file,
# sqflow ARGS attached to it (-p) in FORMAT, then go; both run to their end. PF_STATUS:
# sqflow's.
pf_trace() {
    local format=$1 out=$2 workload=$3 go="$PF_TMP/go.$RANDOM$RANDOM" vm tool
    shift 3
    rm -f "$go"
    "$PF_TMP/sqvm" "$workload" "$go" >"$PF_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    # the VM itself (not the shell before its exec), sleeping in waitFor:'s loop
    for ((i = 0; i < 1000; i++)); do
        readlink "/proc/$vm/exe" | grep -q '/sqvm$' && grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null && break
        sleep 0.01
    done
    start_bg "$out" "$out.err" "$PF_TIMEOUT" "$PF_TOOLS/sqflow" "$@" --format="$format" -p "$vm"
    tool=$BG_PID
    wait_line "$out.err" "$out.err" '^Tracing ' "$tool"
    touch "$go"
    wait "$vm"
    wait "$tool"
    PF_STATUS=$?
}

# pf_summary DECODED: protoc's text of a trace as lines: "B name" per slice begin (its
# interned name), "E" per end, "I name" per instant, "T name" per green process's track
# (a track with a parent), "F id" / "TF id" per flow id begun / ended, "A name" per
# debug annotation; and "S time B|E track name" per slice event, its time absolute (a
# delta on the sequence clock 64 that the clock snapshot starts, unless the packet says
# timestamp_clock_id 3).
pf_summary() {
    awk '
        function flush(    name, t) {
            name = iid != "" ? names[iid] : ename
            if (ts != "") { if (clockid == 3) t = ts; else { clock += ts; t = clock } }
            if (type == "TYPE_SLICE_BEGIN") { print "B " name; printf "S %.0f B %s %s\n", t, uuid, name }
            else if (type == "TYPE_SLICE_END") { print "E"; printf "S %.0f E %s\n", t, uuid }
            else if (type == "TYPE_INSTANT") print "I " name
            if (tname != "" && parent) print "T " tname
            type = iid = ename = tname = ts = clockid = uuid = ""; parent = 0
        }
        block == "clock_snapshot" && $1 == "clock_id:" { cid = $2 }
        block == "clock_snapshot" && $1 == "timestamp:" && cid == 64 { clock = $2 }
        /^  timestamp: / { ts = $2 }
        /^  timestamp_clock_id: / { clockid = $2 }
        block == "track_event" && $1 == "track_uuid:" { uuid = $2 }
        function unq(s) { sub(/^[^"]*"/, "", s); sub(/"$/, "", s); return s }
        /^packet \{/ { flush(); block = "" }
        /^  [a-z_]+ \{/ { block = $1 }
        block == "track_event" && $1 == "type:" { type = $2 }
        block == "track_event" && $1 == "name_iid:" { iid = $2 }
        block == "track_event" && /^    name: / { ename = unq($0) }
        block == "track_event" && $1 == "flow_ids:" { print "F " $2 }
        block == "track_event" && $1 == "terminating_flow_ids:" { print "TF " $2 }
        block == "track_event" && /^      name: / { print "A " unq($0) }
        block == "interned_data" && /^      iid: / { niid = $2 }
        block == "interned_data" && /^      name: / { names[niid] = unq($0) }
        block == "track_descriptor" && /^    name: / { tname = unq($0) }
        block == "track_descriptor" && /^    parent_uuid: / { parent = 1 }
        END { flush() }' "$1"
}

# pf_nesting: "S" lines of pf_summary on stdin, as "count name<parent" lines (parent
# "-": none), each slice's parent the slice open on its track where it began. Events sort
# by time, ties in file order (sort -s), as trace processors sort them.
pf_nesting() {
    sort -s -n -k2,2 | awk '
        $3 == "B" { name = $0; sub(/^S [0-9]+ B [0-9]+ /, "", name)
                    n = depth[$4]; print name "<" (n ? stack[$4, n] : "-"); stack[$4, ++depth[$4]] = name }
        $3 == "E" { if (depth[$4]) depth[$4]--; else print "end without a begin" }' | LC_ALL=C sort | uniq -c | awk '{ $1 = $1; print }'
}

# chrome_nesting JSON: the same of the Chrome trace's complete events: by track, start
# and the longer first, each slice within the last open one it starts in.
chrome_nesting() {
    jq -r '.traceEvents[] | select(.ph == "X") | "\(.pid) \(.tid) \(.ts * 1000 | round) \(.dur * 1000 | round) \(.name)"' "$1" |
        sort -s -k1,1n -k2,2n -k3,3n -k4,4nr | awk '
        { key = $1 " " $2; name = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", name)
          while (depth[key] && $3 >= end[key, depth[key]]) depth[key]--
          n = depth[key]; print name "<" (n ? stack[key, n] : "-")
          stack[key, ++n] = name; end[key, n] = $3 + $4; depth[key] = n }' | LC_ALL=C sort | uniq -c | awk '{ $1 = $1; print }'
}

pf_sqflow() {
    local json="$PF_TMP/trace.json" pb="$PF_TMP/trace.pftrace" dec="$PF_TMP/trace.txt" sum="$PF_TMP/sum"
    local got want jsize psize

    pf_trace chrome "$json" "$PF_DIR/PerfettoFlow.som" -C PerfettoFlow
    local json_status=$PF_STATUS
    pf_trace perfetto "$pb" "$PF_DIR/PerfettoFlow.som" -C PerfettoFlow
    if [ "$json_status" != 0 ] || [ "$PF_STATUS" != 0 ]; then
        fail "perfetto/sqflow traces" "status chrome $json_status, perfetto $PF_STATUS: $(head -3 "$json.err" "$pb.err")"
        return
    fi

    if protoc --decode=perfetto.protos.Trace "$PF_PROTO" <"$pb" >"$dec" 2>"$PF_TMP/protoc.err"; then
        pass "perfetto/sqflow --format=perfetto decodes with protoc --decode=perfetto.protos.Trace $PF_PROTO"
    else
        fail "perfetto/sqflow --format=perfetto decodes" "$(head -5 "$PF_TMP/protoc.err")"
        return
    fi
    pf_summary "$dec" >"$sum"

    # The same slices as the JSON's complete events, name by name: 700 leaf calls, 7
    # ping: and 7 pong:, the forked block, unknownGlobal: (the VM loads Semaphore), the
    # long name (130 bytes: the packet interning it, and its messages, have lengths of
    # two bytes), and waitFor: and run:, which began before sqflow attached.
    want="700 PerfettoFlow>>leaf|7 PerfettoFlow>>ping:|7 PerfettoFlow>>pong:|1 PerfettoFlow(Object)>>unknownGlobal:|1 $PF_LONG|1 PerfettoFlow>>run:|1 PerfettoFlow>>waitFor:|1 [] in PerfettoFlow>>run:"
    local jnames pnames
    jnames=$(jq -r '.traceEvents[] | select(.ph == "X") | .name' "$json" | sort | uniq -c | sort -k1,1nr -k2 |
        awk '{ n = $1; $1 = ""; printf "%s%s%s", sep, n, $0; sep = "|" }')
    pnames=$(sed -n 's/^B //p' "$sum" | sort | uniq -c | sort -k1,1nr -k2 |
        awk '{ n = $1; $1 = ""; printf "%s%s%s", sep, n, $0; sep = "|" }')
    got="begins $(grep -c '^B ' "$sum") ends $(grep -c '^E$' "$sum") json $(jq '[.traceEvents[] | select(.ph == "X")] | length' "$json")"
    if [ "$got" = "begins 719 ends 719 json 719" ] && [ "$pnames" = "$want" ] && [ "$jnames" = "$want" ]; then
        pass "perfetto/sqflow --format=perfetto: 719 slice begins and ends, interned names as in the JSON ($got)"
    else fail "perfetto/sqflow --format=perfetto slices" "$got
perfetto: $pnames
json:     $jnames"; fi

    # Nesting, as a trace processor sorts the events: each leaf inside its ping: or
    # pong:, the forked block's pong:s inside it, ping: 2-7 inside run: (begun before the
    # trace on the main process's track; ping: 1 ran before the VM said which process
    # that was), alike in the JSON.
    local pnest jnest
    pnest=$(grep '^S ' "$sum" | pf_nesting | paste -sd'|')
    jnest=$(chrome_nesting "$json" | paste -sd'|')
    want="1 PerfettoFlow(Object)>>unknownGlobal:<-|1 $PF_LONG<-|350 PerfettoFlow>>leaf<PerfettoFlow>>ping:|350 PerfettoFlow>>leaf<PerfettoFlow>>pong:|1 PerfettoFlow>>ping:<-|6 PerfettoFlow>>ping:<PerfettoFlow>>run:|7 PerfettoFlow>>pong:<[] in PerfettoFlow>>run:|1 PerfettoFlow>>run:<-|1 PerfettoFlow>>waitFor:<-|1 [] in PerfettoFlow>>run:<-"
    if [ "$pnest" = "$want" ] && [ "$jnest" = "$want" ]; then
        pass "perfetto/sqflow --format=perfetto: slices nest as in the JSON, sorted by time as a trace processor sorts them"
    else fail "perfetto/sqflow --format=perfetto nesting" "perfetto: $pnest
json:     $jnest"; fi

    # The tracks, named for their green processes (main, and the forked ponger) as the
    # JSON names its threads (thread ids differ between the two runs), and
    # the calls that began before the trace or were still running, annotated alike.
    local jtracks ptracks jnotes pnotes
    jtracks=$(jq -r '.traceEvents[] | select(.name == "thread_name") | .args.name' "$json" | sed 's/thread [0-9]*/thread N/' | sort | paste -sd'|')
    ptracks=$(sed -n 's/^T //p' "$sum" | sed 's/thread [0-9]*/thread N/' | sort | paste -sd'|')
    jnotes=$(jq -r '.traceEvents[] | select(.ph == "X" and .args) | .args | keys[]' "$json" | sort | uniq -c | awk '{ print $1, $2 }' | paste -sd' ')
    pnotes=$(sed -n 's/^A //p' "$sum" | sort | uniq -c | awk '{ print $1, $2 }' | paste -sd' ')
    want='green process not known yet (thread N)|main (green process 1, thread N)|ponger (green process 2, thread N)'
    if [ "$ptracks" = "$want" ] && [ "$jtracks" = "$want" ] && [ "$pnotes" = "$jnotes" ] && [ -n "$pnotes" ]; then
        pass "perfetto/sqflow --format=perfetto: a track per green process, named as in the JSON; annotations as its args ($pnotes)"
    else fail "perfetto/sqflow --format=perfetto tracks" "perfetto: $ptracks / $pnotes
json:     $jtracks / $jnotes"; fi

    # Flows: the JSON has none; the protobuf has one per process switch (7 rounds, two
    # switches each), from a "process switch" instant to the next event of the process
    # switched to, each id begun once and ended once.
    local flows
    flows="instants $(grep -c '^I process switch$' "$sum") begun $(grep '^F ' "$sum" | cut -d' ' -f2 | sort -u | wc -l)"
    flows="$flows ended $(grep '^TF ' "$sum" | cut -d' ' -f2 | sort -u | wc -l)"
    flows="$flows unmatched $(sed -n 's/^T\?F //p' "$sum" | sort | uniq -u | wc -l)"
    if [ "$flows" = "instants 14 begun 14 ended 14 unmatched 0" ]; then
        pass "perfetto/sqflow --format=perfetto: a flow for each of the 14 process switches ($flows)"
    else fail "perfetto/sqflow --format=perfetto flows" "$flows"; fi

    jsize=$(stat -c %s "$json")
    psize=$(stat -c %s "$pb")
    if [ "$((3 * psize))" -le "$jsize" ]; then
        pass "perfetto/sqflow --format=perfetto: $psize bytes, JSON $jsize bytes for the same 719 calls ($((100 * psize / jsize))%)"
    else fail "perfetto/sqflow --format=perfetto size" "$psize bytes, more than a third of the JSON's $jsize"; fi
}

# Calls that began before the trace, three on one track (tests/tools/FlowTree.som,
# unfiltered: System>>initialize: -> run: -> waitFor:, all returning while traced): their
# begins, written at the trace's end, must nest them as the JSON does, the outermost
# first among the ties at the window's start.
pf_before() {
    local json="$PF_TMP/tree.json" pb="$PF_TMP/tree.pftrace" pnest jnest want st
    pf_trace chrome "$json" tests/tools/FlowTree.som
    st=$PF_STATUS
    pf_trace perfetto "$pb" tests/tools/FlowTree.som
    pnest=$(protoc --decode=perfetto.protos.Trace "$PF_PROTO" <"$pb" 2>&1 | pf_summary /dev/stdin | grep '^S ' | pf_nesting |
        grep -E 'initialize:|run:|waitFor:' | paste -sd'|')
    jnest=$(chrome_nesting "$json" | grep -E 'initialize:|run:|waitFor:' | paste -sd'|')
    want='1 FlowTree>>a<FlowTree>>run:|1 FlowTree>>run:<System>>initialize:|1 FlowTree>>waitFor:<FlowTree>>run:|1 System>>initialize:<-'
    if [ "$st" = 0 ] && [ "$PF_STATUS" = 0 ] && [ "$pnest" = "$want" ] && [ "$jnest" = "$want" ]; then
        pass "perfetto/sqflow --format=perfetto: three calls begun before the trace nest on their track as in the JSON"
    else fail "perfetto/sqflow --format=perfetto calls begun before" "status $st $PF_STATUS
perfetto: $pnest
json:     $jnest"; fi
}

# A green process named with terminal controls and a byte that is not UTF-8
# (tests/names/Names.som): its track's name in the protobuf is the JSON's, byte for byte
# (ESC and BEL as they are, the lone C1 byte as U+FFFD): well-formed UTF-8, as a string
# field must be.
pf_hostile_names() {
    local json="$PF_TMP/names.json" pb="$PF_TMP/names.pftrace" st got
    pf_trace chrome "$json" tests/names/Names.som -C Names
    st=$PF_STATUS
    pf_trace perfetto "$pb" tests/names/Names.som -C Names
    got=$(protoc --decode=perfetto.protos.Trace "$PF_PROTO" <"$pb" 2>&1 |
        python3 -c '
import codecs, json, re, sys
# protoc prints a string field C-escaped (octal for control and non-ASCII bytes)
names = sorted(re.sub(r"thread [0-9]+", "thread N", codecs.escape_decode(m.encode())[0].decode("utf-8"))
               for m in re.findall(r"^    name: \x22(.*)\x22$", sys.stdin.read(), re.M))
with open(sys.argv[1]) as f:
    want = sorted(re.sub(r"thread [0-9]+", "thread N", e["args"]["name"])
                  for e in json.load(f)["traceEvents"] if e["name"] == "thread_name")
evil = [n for n in names if n.startswith("evil")]
print("same" if names == want else "differ: %r %r" % (names, want), ascii(evil))' "$json" 2>&1)
    if [ "$st" = 0 ] && [ "$PF_STATUS" = 0 ] &&
        [ "$got" = "same ['evil\x1b[2J\x07\ufffdx\x9by (green process 2, thread N)']" ]; then
        pass "perfetto/sqflow --format=perfetto: a process named with terminal controls and a stray byte: its track name well-formed UTF-8, as in the JSON"
    else fail "perfetto/sqflow --format=perfetto hostile names" "status $st $PF_STATUS: $got"; fi
}

if [ "$(id -u)" != 0 ]; then
    skip "perfetto" "needs root (BPF programs, uprobes)"
elif ! command -v jq >/dev/null || ! command -v protoc >/dev/null; then
    skip "perfetto" "jq or protoc is not installed (scripts/deps.sh: protobuf-compiler)"
elif ! make -s tools >/dev/null 2>&1; then
    fail "perfetto/build" "make tools failed"
else
    mkdir -p "$PF_TMP"
    cp "$VM" "$PF_TMP/sqvm"
    pf_sqflow
    pf_before
    pf_hostile_names
fi
