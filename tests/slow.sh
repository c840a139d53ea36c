# SPDX-License-Identifier: BSD-2-Clause
# tests/slow.sh - sqslow, the flight recorder per request, on a service with seeded faults
# (tests/slow/SlowService.som) under load over real sockets (tests/slow/drive.py): one
# request in SL_EVERY rounds is slowed by a mutex another process holds for 30 ms, a
# forced full collection of a large heap, or an upstream socket that answers 30 ms late,
# in turn, each alone; every other round is a fast request on each of SL_CONNS
# connections at once. With --over 20ms sqslow must print exactly the seeded requests,
# each with its cause and method (and the mutex's holder and waker), each line within
# 1 s of its end, and write for each a capture that parses as the Trace Event Format,
# balanced, with the request's slice; speedscope in headless Chromium opens one; SIGUSR1
# writes the window; attached to the service mid-flight, the counts stay exact; and
# --gc-over and --wait-over catch exactly the seeded pauses and waits. Sourced by
# tests/run.sh (pass, fail, skip, start_bg, wait_line, $VM, $TMP). Needs root.

SL_TOOLS=build/tools
SL_TMP="$TMP/slow"
SL_ROUNDS=1200
SL_EVERY=50
SL_CONNS=3
SL_BALLAST=16000000	# an Array's slots: a full collection scans them, in well over 20 ms
SL_WINDOW_MS=500

# sl_run NAME ROUNDS DRIVER-FLAG SQSLOW-ARGS...: the driver starts the service, sqslow
# attaches to it, the rounds run; at the last answer sqslow gets SIGUSR1, 1 s later its
# output is kept (out.1s), then it gets SIGINT and the service stops. Its output in
# $SL_TMP/NAME/{out,out.1s,err}, the captures in .../cap, the driver's schedule in
# .../drive.out. 1 (SL_ERR says why) if a part did not run.
sl_run() {
    local d="$SL_TMP/$1" rounds=$2 flag=$3 drv i
    shift 3
    rm -rf "$d"
    mkdir -p "$d/cap"
    cp "$VM" "$d/sqvm"
    python3 tests/slow/drive.py "$d/sqvm" "$d" "$rounds" "$SL_EVERY" "$SL_CONNS" "$SL_BALLAST" $flag \
        >"$d/drive.out" 2>"$d/drive.err" </dev/null &
    drv=$!
    for ((i = 0; i < 1200; i++)); do [ -f "$d/pid" ] && break; kill -0 "$drv" 2>/dev/null || break; sleep 0.05; done
    if [ ! -f "$d/pid" ]; then
        SL_ERR="the service did not start: $(cat "$d/drive.err")"
        wait "$drv"
        return 1
    fi
    start_bg "$d/out" "$d/err" 120 "$SL_TOOLS/sqslow" -p "$(cat "$d/pid")" --out "$d/cap" "$@"
    SL_TOOL=$BG_PID
    if ! wait_line "$d/out" "$d/err" '^Tracing ' "$SL_TOOL"; then
        SL_ERR="sqslow did not attach: $(cat "$d/err")"
        kill "$drv" 2>/dev/null
        wait
        return 1
    fi
    touch "$d/go"
    for ((i = 0; i < 1200; i++)); do grep -q '^first ' "$d/drive.out" && break; kill -0 "$drv" 2>/dev/null || break; sleep 0.05; done
    # the window while the last requests are in it; the lines as they are 1 s later
    kill -USR1 "$(pgrep -P "$SL_TOOL" | head -1)" 2>/dev/null
    sleep 1
    cp "$d/out" "$d/out.1s"
    for ((i = 0; i < 200; i++)); do grep -q '^window' "$d/out" && break; sleep 0.05; done
    kill -INT "$(pgrep -P "$SL_TOOL" | head -1)" 2>/dev/null
    wait "$SL_TOOL"
    SL_STATUS=$?
    touch "$d/stop"
    wait "$drv"
    SL_DRV_STATUS=$?
    if [ "$SL_DRV_STATUS" != 0 ] || [ "$SL_STATUS" != 0 ]; then
        SL_ERR="driver $SL_DRV_STATUS: $(tail -3 "$d/drive.err"); sqslow $SL_STATUS: $(grep -v '^libbpf' "$d/err" | tail -3)"
        return 1
    fi
    return 0
}

# What each seeded request's line must say, from the driver's schedule: ID, then the
# cause and method (and for the mutex who held it and who woke it); for a fast request
# the service itself timed over 21 ms (the busy machine did not run the VM), ID "slowed";
# sorted by ID.
sl_expected() { # drive.out
    awk '$1 == "seeded" {
        if ($3 == "sem") print $2, "SEM in SlowService>>lockCache (held by refresher, woken by refresher in SlowService>>refresh)"
        if ($3 == "gc") print $2, "GC in SlowService>>compact (full)"
        if ($3 == "io") print $2, "IO in IOHandle>>read:timeout:" }
        $1 == "slowed" { print $2, "slowed" }' "$1" | sort -n
}

# The same from sqslow's request lines as they were 1 s after the last answer (out.1s: a
# fast one's cause is the machine's, "slowed"),
# leaving out the requests the service timed within 1 ms of the threshold; each line's
# capture file on fd 3.
sl_actual() { # out drive.out
    awk 'FNR == NR { if ($1 == "near") near[$2] = 1; next }
        /^GET \// {
        id = $4; cause = $0; sub(/^[^:]*: /, "", cause); sub(/ -> .*/, "", cause)
        sub(/ [0-9.]+ ms/, "", cause); sub(/, [A-Z]+ [0-9.]+ ms.*/, "", cause)
        if ($2 == "/fast") cause = "slowed"
        file = $0; sub(/.* -> /, "", file)
        print id, file > "/dev/fd/3"
        if (!(id in near)) print id, cause }' "$2" "$1" | sort -n
}

# sl_exact NAME LABEL: the run's lines against its schedule, and its captures
sl_exact() {
    local d="$SL_TMP/$1" label=$2 want got seeded caught slowed unslowed false bad f id out
    want=$(sl_expected "$d/drive.out")
    got=$(sl_actual "$d/out.1s" "$d/drive.out" 3>"$d/files")
    seeded=$(grep -c '^seeded ' "$d/drive.out")
    slowed=$(grep -c '^slowed ' "$d/drive.out")
    unslowed=$(grep -c '^unslowed ' "$d/drive.out")
    caught=$(comm -12 <(awk '$2 != "slowed" { print $1 }' <<<"$want") <(cut -d' ' -f1 <<<"$got") | grep -c .)
    false=$(comm -13 <(cut -d' ' -f1 <<<"$want") <(cut -d' ' -f1 <<<"$got") | grep -c .)
    if [ "$seeded" -ge 9 ] && [ "$want" = "$got" ]; then
        pass "slow/$label: $caught of $seeded seeded slow requests caught, each with its cause and method, $false false (of $(awk '$1 == "fast" { print $2 }' "$d/drive.out") fast requests, $slowed slowed by the machine, caught too; $unslowed seeds under 21 ms by the service's clock)"
    else
        fail "slow/$label: $caught of $seeded seeded caught, $false false" "$(diff <(echo "$want") <(echo "$got") | head -20)"
    fi
    bad=""
    while read -r id f; do
        out=$(python3 tests/slow/check_capture.py "$f" "$id" "$SL_WINDOW_MS" 2>&1) || bad="$bad
$out"
    done <"$d/files"
    if [ -z "$bad" ] && [ -s "$d/files" ]; then
        pass "slow/$label: $(wc -l <"$d/files") captures parse as the Trace Event Format, balanced, each with its request's slice and at least ${SL_WINDOW_MS} ms before its end"
    else fail "slow/$label: the captures" "$bad"; fi
}

sl_whole() {
    local d="$SL_TMP/whole" f dom window out=""
    if ! sl_run whole "$SL_ROUNDS" "" --over 20ms -w "${SL_WINDOW_MS}ms" --io-calls; then
        fail "slow/whole: a run" "$SL_ERR"; return
    fi
    sl_exact whole whole
    # --io-calls: the upstream's calls in each of its captures, by the method that made them
    f=$(awk '$2 ~ /-[0-9]+-/ { print $2 }' "$d/files" | while read -r c; do
        jq -e '.otherData.summary | test("^GET /io ")' "$c" >/dev/null && echo "$c"; done)
    if [ -n "$f" ] && (for c in $f; do
        jq -e '[.traceEvents[] | select(.cat == "io" and .name == "read" and .args.method == "IOHandle>>read:timeout:" and .args.kind == "tcp")] | length > 0' "$c" >/dev/null || exit 1
        done); then
        pass "slow/--io-calls: every capture of the upstream's requests ($(wc -w <<<"$f")) holds their reads, by method and descriptor kind"
    else fail "slow/--io-calls" "$f"; fi
    # SIGUSR1: the window, now
    window=$(awk '/^window -> / { print $3 }' "$d/out")
    if [ -n "$window" ] && out=$(python3 tests/slow/check_capture.py "$window" 0 "$SL_WINDOW_MS" 2>&1) &&
        jq -e '.otherData.trigger == "signal" and ([.traceEvents[] | select(.cat == "request")] | length > 0)' "$window" >/dev/null &&
        jq -e '[.traceEvents[] | select(.cat == "alloc")] | length > 0 and
            all(.args.class != "" and (.args.method | test(">>")) and .args.bytes > 0 and .args.weight > 0)' "$window" >/dev/null; then
        pass "slow/SIGUSR1 writes the window: $out"
    else fail "slow/SIGUSR1 writes the window" "$window: $out $(tail -3 "$d/out")
allocation samples: $(jq -c '[.traceEvents[] | select(.cat == "alloc")] | [length, .[0]]' "$window" 2>&1)"; fi
    # a real viewer: the first capture of the mutex in speedscope
    f=$(grep -m1 . "$d/files" | cut -d' ' -f2)
    if ! dom=$(speedscope_dom "$f" sqslow-capture.json); then
        skip "slow/speedscope" "$dom"
    elif grep -q "<title>sqslow-capture.json - speedscope</title>" <<<"$dom" &&
        grep -qF "conn 1 (3) requests" <<<"$dom" && grep -qF "refresher (2)" <<<"$dom"; then
        pass "slow/speedscope $(jq -r .version build/deps/speedscope/node_modules/speedscope/package.json) in headless Chromium opens a capture and lists its tracks (conn 1's requests, refresher)"
    else fail "slow/speedscope" "$(head -c 800 <<<"$dom")"; fi
}

sl_midflight() {
    if ! sl_run midflight 600 --midflight --over 20ms -w "${SL_WINDOW_MS}ms"; then
        fail "slow/midflight: a run" "$SL_ERR"; return
    fi
    sl_exact midflight "attached mid-flight"
}

# --gc-over, --wait-over: a few seeds, requests never slow enough; exactly the seeded
# collections, and the seeded waits of the process that serves them (conn 1): its mutex
# waits and its upstream waits
sl_triggers() {
    local d="$SL_TMP/triggers" gcs sems ios want_gc want_sem want_io
    if ! sl_run triggers 300 "" --over 10s --gc-over 10ms --wait-over 25ms -w "${SL_WINDOW_MS}ms"; then
        fail "slow/--gc-over, --wait-over: a run" "$SL_ERR"; return
    fi
    # every seed, slow enough for --over or not ("unslowed")
    want_gc=$(grep -c '^[a-z]* [0-9]* gc\( [0-9]*\)\?$' "$d/drive.out")
    want_sem=$(grep -c '^[a-z]* [0-9]* sem\( [0-9]*\)\?$' "$d/drive.out")
    want_io=$(grep -c '^[a-z]* [0-9]* io\( [0-9]*\)\?$' "$d/drive.out")
    gcs=$(grep -c '^gc: full pause [0-9.]* ms in SlowService>>compact of conn 1 -> ' "$d/out")
    sems=$(grep -c '^wait: conn 1 (3) SEM [0-9.]* ms in SlowService>>lockCache -> ' "$d/out")
    ios=$(grep -c '^wait: conn 1 (3) IO [0-9.]* ms in IOHandle>>read:timeout: -> ' "$d/out")
    if [ "$want_gc" -ge 2 ] && [ "$gcs $sems $ios" = "$want_gc $want_sem $want_io" ] &&
        ! grep -q '^GET \|^gc: young' "$d/out"; then
        pass "slow/--gc-over 10ms, --wait-over 25ms: the $gcs seeded full collections, conn 1's $sems mutex waits and $ios upstream waits"
    else fail "slow/--gc-over, --wait-over" "want $want_gc $want_sem $want_io, got $gcs $sems $ios: $(head -c 1500 "$d/out")"; fi
}

# W3C trace context and --route (tests/probes/RequestTrace.som, the probes tier's workload):
# of its seven requests only GET /slow (a 1 ms Delay, traceparent parent 00000000000000a1)
# is both of the route and over 1 ms: its line and its capture carry the trace id, its
# parent and a span of its own
sl_trace() {
    local d="$SL_TMP/trace" vm got cap
    rm -rf "$d"
    mkdir -p "$d/cap"
    # the VM waits for its stop file: sqslow reads the routes' names from it as it reports
    "$VM" -cp tests/probes tests/probes/RequestTrace.som "$d/go" "$d/stop" >"$d/vm.out" 2>&1 </dev/null &
    vm=$!
    wait_exec "$vm"
    start_bg "$d/out" "$d/err" 60 "$SL_TOOLS/sqslow" -j --route 'GET /s' --over 1ms --out "$d/cap" -p "$vm"
    wait_line "$d/out" "$d/err" '^Tracing ' "$BG_PID"
    touch "$d/go"
    wait_line "$d/out" "$d/err" '"slow_request"' "$BG_PID"
    touch "$d/stop"
    wait "$vm"
    kill -INT "$BG_PID" 2>/dev/null
    wait "$BG_PID"
    got=$(jq -r 'select(.type == "slow_request") | "\(.id) \(.cause) \(.trace_id) \(.parent_span_id) \(.span_id | length)"' \
        "$d/out" 2>&1 | tr '\n' ' ')
    cap=$(ls "$d/cap"/sqslow-"$vm"-3-*.json 2>/dev/null)
    if [ "$got" = "3 delay 4bf92f3577b34da6a3ce929d0e0e4736 00000000000000a1 16 " ] && [ -n "$cap" ] &&
        [ "$(jq -r --arg span "$(jq -r 'select(.type == "slow_request") | .span_id' "$d/out")" \
            '[.traceEvents[] | select(.cat == "request" and .args.captured) |
              "\(.args.trace_id) \(.args.parent_span_id) \(.args.span_id == $span)"] | join(",")' "$cap")" = \
            "4bf92f3577b34da6a3ce929d0e0e4736 00000000000000a1 true" ]; then
        pass "slow/trace context, --route: GET /slow alone, its trace id, parent and own span in its line and capture"
    else fail "slow/trace context" "got '$got', capture '$cap': $(head -c 600 "$d/out") $(head -c 300 "$d/err")"; fi
}

# --format=chrome,perfetto: each capture of a short run written both ways, from the same
# window. Each .pftrace decodes with protoc against tools/perfetto/trace_subset.proto and
# holds exactly its .json's slices, instants, flows, event names, track names and
# requests (tests/slow/check_pftrace.py), in at most a third of its bytes.
sl_perfetto() {
    local d="$SL_TMP/perfetto" proto=tools/perfetto/trace_subset.proto pb js out n=0 bad="" sum pbytes=0 jbytes=0
    if ! command -v protoc >/dev/null; then
        skip "slow/--format=perfetto" "protoc is not installed (scripts/deps.sh: protobuf-compiler)"; return
    fi
    if ! sl_run perfetto 300 "" --over 20ms -w "${SL_WINDOW_MS}ms" --format=chrome,perfetto; then
        fail "slow/--format=perfetto: a run" "$SL_ERR"; return
    fi
    local flows=0 instants=0 slices=0
    for js in "$d"/cap/*.json; do
        pb=${js%.json}.pftrace
        n=$((n + 1))
        if ! protoc --decode=perfetto.protos.Trace "$proto" <"$pb" >"$pb.txt" 2>"$pb.err"; then
            bad="$bad $pb: $(head -3 "$pb.err")"; continue
        fi
        if ! out=$(python3 tests/slow/check_pftrace.py "$pb.txt" "$js" 2>&1); then bad="$bad $out"; continue; fi
        read -r s _ i _ f _ <<<"$out"
        slices=$((slices + s)) instants=$((instants + i)) flows=$((flows + f))
        pbytes=$((pbytes + $(stat -c %s "$pb"))) jbytes=$((jbytes + $(stat -c %s "$js")))
        [ $(($(stat -c %s "$pb") * 3)) -le "$(stat -c %s "$js")" ] ||
            bad="$bad $pb: $(stat -c %s "$pb") bytes, its JSON $(stat -c %s "$js")"
    done
    sum="$n captures: $slices slices, $instants instants, $flows flows; $pbytes bytes against the JSON's $jbytes"
    if [ "$n" -ge 3 ] && [ "$(ls "$d"/cap/*.pftrace | wc -l)" = "$n" ] && [ -z "$bad" ] &&
        [ "$slices" -gt 0 ] && [ "$instants" -gt 0 ] && [ "$flows" -gt 0 ] && grep -q '^window -> .*\.json$' "$d/out"; then
        pass "slow/--format=perfetto: each capture's .pftrace decodes with protoc and holds its JSON's events, names and tracks in at most 1/3 of its size ($sum)"
    else fail "slow/--format=perfetto" "$sum:$bad $(tail -3 "$d/err")"; fi
}

# Off the CPU: tests/slow/OffCpu.som spins in a request while the VM is stopped for 300 ms
# (SIGSTOP, SIGCONT): the request's cause must be OFFCPU, with about 300 ms of it, not CPU
# (which is what the VM's records alone say: its process never stopped running).
sl_offcpu() {
    local d="$SL_TMP/offcpu" vm tool got
    mkdir -p "$d/cap"
    "$VM" -cp tests/slow tests/slow/OffCpu.som "$d/go" "$d/done" >"$d/vm.out" 2>"$d/vm.err" </dev/null &
    vm=$!
    wait_exec "$vm"
    start_bg "$d/out" "$d/err" 60 "$SL_TOOLS/sqslow" -p "$vm" --over 100ms -j --out "$d/cap"
    tool=$BG_PID
    wait_line "$d/out" "$d/err" '^Tracing' "$tool"
    touch "$d/go"
    wait_line "$d/vm.err" "$d/vm.err" '^begin$' "$vm"
    sleep 0.05
    kill -STOP "$vm"; sleep 0.3; kill -CONT "$vm"
    sleep 0.05
    touch "$d/done"
    wait_line "$d/vm.err" "$d/vm.err" '^end$' "$vm"
    sleep 0.3
    kill -INT "$(pgrep -P "$tool" | head -1)" 2>/dev/null
    wait "$tool" 2>/dev/null
    kill "$vm" 2>/dev/null
    wait "$vm" 2>/dev/null
    got=$(jq -r 'select(.type == "slow_request") | "\(.route) \(.cause) \(.breakdown.offcpu_ms) \(.breakdown.cpu_ms)"' "$d/out" 2>&1)
    # one slow request, that one (an exit in the first line's rule would skip a second)
    if awk 'NR == 1 { ok = $1 " " $2 == "GET /spin" && $3 == "offcpu" && $4 >= 280 && $4 <= 2000 && $5 > 0 }
            END { exit !(ok && NR == 1) }' <<<"$got"; then
        pass "slow/off the CPU: the request spun while the VM was stopped 300 ms: OFFCPU, $(awk '{ printf "%.0f ms off, %.0f ms on", $4, $5 }' <<<"$got") the CPU"
    else fail "slow/off the CPU: cause offcpu, 280-2000 ms of it" "got: $got
$(tail -3 "$d/err")"; fi
}

# --filter TEXT: the parts whose "slow/NAME" holds it
sl_selected() { [ -z "${FILTER:-}" ] || [[ "slow/$1" == *"$FILTER"* ]]; }

if [ "$(id -u)" != 0 ]; then
    skip "slow" "needs root (BPF programs, uprobes)"
else
    mkdir -p "$SL_TMP"
    sl_selected whole && sl_whole
    sl_selected midflight && sl_midflight
    sl_selected triggers && sl_triggers
    sl_selected trace && sl_trace
    sl_selected perfetto && sl_perfetto
    sl_selected "off the CPU" && sl_offcpu
fi
