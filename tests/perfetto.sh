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

# pf_trace FORMAT OUT: the workload waiting for its go file, sqflow -C PerfettoFlow
# attached to it (-p) in FORMAT, then go; both run to their end. PF_STATUS: sqflow's.
pf_trace() {
    local format=$1 out=$2 go="$PF_TMP/go.$RANDOM$RANDOM" vm tool
    rm -f "$go"
    "$PF_TMP/sqvm" "$PF_DIR/PerfettoFlow.som" "$go" >"$PF_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    # the VM itself (not the shell before its exec), sleeping in waitFor:'s loop
    for ((i = 0; i < 1000; i++)); do
        readlink "/proc/$vm/exe" | grep -q '/sqvm$' && grep -q nanosleep "/proc/$vm/wchan" 2>/dev/null && break
        sleep 0.01
    done
    start_bg "$out" "$out.err" "$PF_TIMEOUT" "$PF_TOOLS/sqflow" -C PerfettoFlow --format="$format" -p "$vm"
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
# debug annotation.
pf_summary() {
    awk '
        function flush() {
            if (type == "TYPE_SLICE_BEGIN") print "B " (iid != "" ? names[iid] : ename)
            else if (type == "TYPE_SLICE_END") print "E"
            else if (type == "TYPE_INSTANT") print "I " (iid != "" ? names[iid] : ename)
            if (tname != "" && parent) print "T " tname
            type = iid = ename = tname = ""; parent = 0
        }
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

pf_sqflow() {
    local json="$PF_TMP/trace.json" pb="$PF_TMP/trace.pftrace" dec="$PF_TMP/trace.txt" sum="$PF_TMP/sum"
    local got want jsize psize

    pf_trace chrome "$json"
    local json_status=$PF_STATUS
    pf_trace perfetto "$pb"
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
    # ping: and 7 pong:, the forked block, unknownGlobal: (the VM loads Semaphore), and
    # waitFor: and run:, which began before sqflow attached.
    want='700 PerfettoFlow>>leaf|7 PerfettoFlow>>ping:|7 PerfettoFlow>>pong:|1 PerfettoFlow(Object)>>unknownGlobal:|1 PerfettoFlow>>run:|1 PerfettoFlow>>waitFor:|1 [] in PerfettoFlow>>run:'
    local jnames pnames
    jnames=$(jq -r '.traceEvents[] | select(.ph == "X") | .name' "$json" | sort | uniq -c | sort -k1,1nr -k2 |
        awk '{ n = $1; $1 = ""; printf "%s%s%s", sep, n, $0; sep = "|" }')
    pnames=$(sed -n 's/^B //p' "$sum" | sort | uniq -c | sort -k1,1nr -k2 |
        awk '{ n = $1; $1 = ""; printf "%s%s%s", sep, n, $0; sep = "|" }')
    got="begins $(grep -c '^B ' "$sum") ends $(grep -c '^E$' "$sum") json $(jq '[.traceEvents[] | select(.ph == "X")] | length' "$json")"
    if [ "$got" = "begins 718 ends 718 json 718" ] && [ "$pnames" = "$want" ] && [ "$jnames" = "$want" ]; then
        pass "perfetto/sqflow --format=perfetto: 718 slice begins and ends, interned names as in the JSON ($got)"
    else fail "perfetto/sqflow --format=perfetto slices" "$got
perfetto: $pnames
json:     $jnames"; fi

    # The tracks: the JSON's thread names (thread ids differ between the two runs), and
    # the calls that began before the trace or were still running, annotated alike.
    local jtracks ptracks jnotes pnotes
    jtracks=$(jq -r '.traceEvents[] | select(.name == "thread_name") | .args.name' "$json" | sed 's/thread [0-9]*/thread N/' | sort | paste -sd'|')
    ptracks=$(sed -n 's/^T //p' "$sum" | sed 's/thread [0-9]*/thread N/' | sort | paste -sd'|')
    jnotes=$(jq -r '.traceEvents[] | select(.ph == "X" and .args) | .args | keys[]' "$json" | sort | uniq -c | awk '{ print $1, $2 }' | paste -sd' ')
    pnotes=$(sed -n 's/^A //p' "$sum" | sort | uniq -c | awk '{ print $1, $2 }' | paste -sd' ')
    want='green process 1 (thread N)|green process 2 (thread N)|green process not known yet (thread N)'
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
        pass "perfetto/sqflow --format=perfetto: $psize bytes, JSON $jsize bytes for the same 718 calls ($((100 * psize / jsize))%)"
    else fail "perfetto/sqflow --format=perfetto size" "$psize bytes, more than a third of the JSON's $jsize"; fi
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
fi
