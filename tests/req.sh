# SPDX-License-Identifier: BSD-2-Clause
# tests/req.sh - the tools that answer a service's questions: sqreq (requests per route,
# where their time went) and sqio (I/O by Smalltalk method), on real VMs running the
# workloads of tests/req/, whose work is known in advance. Sourced by tests/run.sh (uses
# its pass/fail/skip, start_bg, wait_line, $VM and $TMP). Needs root. Every case runs a
# private copy of the VM binary (as tests/tools.sh explains).

RQ_TOOLS=build/tools
RQ_DIR=tests/req
RQ_TMP="$TMP/req"
RQ_TIMEOUT=60

# rq_run WORKLOAD TOOL ARGS...: starts the VM on WORKLOAD (waiting for its go file, then
# RQ_VM_ARGS),
# attaches TOOL ARGS... -p to it, lets it go and waits for both. Output in $RQ_TMP/out.
RQ_VM_ARGS=()	# more arguments for the workload, after its go file
rq_run() {
    local workload=$1 tool=$2 go="$RQ_TMP/go.$RANDOM" vm i
    shift 2
    rm -f "$go"
    "$RQ_TMP/sqvm" -cp "$RQ_DIR" "$RQ_DIR/$workload.som" "$go" "${RQ_VM_ARGS[@]}" >"$RQ_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    wait_exec "$vm"
    start_bg "$RQ_TMP/out" "$RQ_TMP/err" "$RQ_TIMEOUT" "$RQ_TOOLS/$tool" "$@" -p "$vm"
    RQ_TOOL=$BG_PID
    wait_line "$RQ_TMP/out" "$RQ_TMP/err" '^Tracing ' "$RQ_TOOL"
    touch "$go"
    wait "$vm"
    RQ_VM_STATUS=$?
    wait "$RQ_TOOL"
    RQ_STATUS=$?
}

# rq_midflight WORKLOAD TOOL ARGS...: the workload already busy (looping until its stop
# file), the tool attached for a while (its ARGS end it: -d), then the workload stopped.
rq_midflight() {
    local workload=$1 tool=$2 go="$RQ_TMP/go.$RANDOM" stop="$RQ_TMP/stop.$RANDOM" vm
    shift 2
    rm -f "$stop"
    touch "$go"
    "$RQ_TMP/sqvm" -cp "$RQ_DIR" "$RQ_DIR/$workload.som" "$go" "$stop" >"$RQ_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    sleep 0.5
    timeout -s KILL "$RQ_TIMEOUT" "$RQ_TOOLS/$tool" "$@" -p "$vm" >"$RQ_TMP/out" 2>"$RQ_TMP/err" </dev/null
    RQ_STATUS=$?
    touch "$stop"
    wait "$vm"
    RQ_VM_STATUS=$?
}

# ---- sqreq -----------------------------------------------------------------------

# The checks every sqreq report of Routes.som passes, whole or attached mid-flight:
# /alloc's 1,000 allocations per request exactly, the Delay's and the Semaphore's
# time within 20%, the /cpu route on the CPU, and each route's breakdown adding up to
# its mean latency within 2%.
RQ_ROUTE_CHECKS='(.routes | map({(.route): .}) | add) as $r |
    def sum_parts: .breakdown | [.[]] | add;
    [$r["GET /alloc"].allocations_per_request,
     ($r["GET /delay"].breakdown.delay_ms | . >= 8 and . <= 12),
     ($r["GET /sem"].breakdown.sem_ms | . >= 4 and . <= 6),
     ($r["GET /cpu"] | .breakdown.cpu_ms >= 0.9 * .mean_ms),
     ([.routes[] | ((sum_parts - .mean_ms) | fabs) <= 0.02 * .mean_ms] | all)]'

rq_sqreq() {
    local got
    rq_run Routes sqreq -j
    got=$(jq -r "[(.routes | map(\"\(.route)=\(.count)\") | sort | join(\" \")), ($RQ_ROUTE_CHECKS | map(tostring) | join(\" \")), .lost, .nested, .began_before_trace] | map(tostring) | join(\" | \")" "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "GET /alloc=17 GET /cpu=23 GET /delay=19 GET /sem=13 | 1000 true true true true | 0 | 0 | 0" ]; then
        pass "req/sqreq: 23, 19, 17, 13 requests by route; 1,000 allocations per request; DELAY 10 ms and SEM 5 ms within 20%; each breakdown adds up to the latency within 2%"
    else fail "req/sqreq" "status $RQ_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi

    # The three slowest are the /delay requests on a quiet machine; on a loaded one a /cpu
    # request can outlast them. Exact either way: the slowest is the longest any route
    # saw (its MAX), they come in order, each breakdown adds up to its latency, and each
    # names the method its route waits or computes in.
    rq_run Routes sqreq -j --slowest 3
    got=$(jq -r '{"GET /delay": "[] in Routes>>round", "GET /cpu": "Routes>>spin", "GET /sem": "Routes>>waitForOther"} as $m |
        [(.slowest | length),
         ((.slowest[0].latency_ms - ([.routes[].max_ms] | max)) | fabs < 0.001),
         ([.slowest[].latency_ms] == ([.slowest[].latency_ms] | sort | reverse)),
         ([.slowest[] | (([.breakdown[]] | add) - .latency_ms | fabs) <= 0.02 * .latency_ms] | all),
         ([.slowest[] | select($m[.route]) | .methods[0].name == $m[.route]] | all),
         ([.slowest[] | select(.route == "GET /delay") | .breakdown.delay_ms >= 9] | all),
         ([.slowest[].route] | join(","))] | map(tostring) | join(" ")' "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [[ "$got" == "3 true true true true true "* ]]; then
        pass "req/sqreq --slowest 3: the slowest is the longest request (MAX), in order, each with its breakdown and the method that took it (${got##* })"
    else fail "req/sqreq --slowest" "status $RQ_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi

    # W3C trace context (tests/probes/RequestTrace.som): the four requests with a valid
    # traceparent carry its trace id and parent and a span of their own (all distinct),
    # whether their begin was held (three ran in one go) or written (GET /slow); the three
    # with a malformed one have none.
    rm -f "$RQ_TMP/trace.go"
    "$RQ_TMP/sqvm" -cp tests/probes tests/probes/RequestTrace.som "$RQ_TMP/trace.go" >"$RQ_TMP/vm.out" 2>&1 </dev/null &
    local vm=$!
    wait_exec "$vm"
    start_bg "$RQ_TMP/out" "$RQ_TMP/err" "$RQ_TIMEOUT" "$RQ_TOOLS/sqreq" -j --slowest 10 -p "$vm"
    wait_line "$RQ_TMP/out" "$RQ_TMP/err" '^Tracing ' "$BG_PID"
    touch "$RQ_TMP/trace.go"
    wait "$vm"
    wait "$BG_PID"
    got=$(jq -r '([.slowest | sort_by(.id)[] | "\(.id) \(.route) \(.trace_id) \(.parent_span_id)"] | join(",")),
        ([.slowest[] | .span_id | select(. != null)] | unique | length)' "$RQ_TMP/out" 2>&1 | tr '\n' ' ')
    if [ "$got" = "1 GET /t 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7,2 GET /t 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7,3 GET /slow 4bf92f3577b34da6a3ce929d0e0e4736 00000000000000a1,4 GET /t 4bf92f3577b34da6a3ce929d0e0e4736 00000000000000b2,5 GET /bad null null,6 GET /bad null null,7 GET /bad null null 4 " ]; then
        pass "req/sqreq --slowest: each request's W3C trace id, parent and its own span; none for malformed traceparents"
    else fail "req/sqreq --slowest: trace ids" "'$got' $(head -3 "$RQ_TMP/err")"; fi

    # A /cpu request begins and ends in one run of its process: the VM holds its begin
    # back and writes it as one record at its end, so its CPU samples are kept by its id
    # while it runs. All 72 requests: the 23 /cpu ones (about 45 ms, 45 samples at 999 Hz)
    # have at least half their time in samples of Routes>>spin (before they were kept by
    # id, only the last request of each batch had any).
    rq_run Routes sqreq -j --slowest 72
    got=$(jq -r '[.slowest[] | select(.route == "GET /cpu")] |
        [length, ((map(.methods[]? | select(.name == "Routes>>spin") | .ms) | add // 0) >= 0.5 * (map(.latency_ms) | add))]
        | map(tostring) | join(" ")' "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "23 true" ]; then
        pass "req/sqreq --slowest 72: the /cpu requests (one record each) keep their CPU samples in Routes>>spin"
    else fail "req/sqreq --slowest, whole requests' samples" "status $RQ_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi

    rq_run Routes sqreq -L
    got=$(awk '/^latency of / { r = $3 " " $4 } / -> / && r != "" { n[r] += $5 } END { print n["GET /cpu"], n["GET /delay"], n["GET /alloc"], n["GET /sem"] }' "$RQ_TMP/out")
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "23 19 17 13" ] && grep -qE '^[0-9]+ +GET /alloc +17 .* 1000\.0 +[0-9]+$' "$RQ_TMP/out"; then
        pass "req/sqreq -L: the table, and every request in its route's latency histogram"
    else fail "req/sqreq -L" "status $RQ_STATUS: '$got' $(head -8 "$RQ_TMP/out")"; fi

    # attached to a VM in full flight: the same answers for the requests it saw whole
    rq_midflight Routes sqreq -j -d 2
    got=$(jq -r "[($RQ_ROUTE_CHECKS | map(tostring) | join(\" \")), (.routes | length), .lost] | map(tostring) | join(\" | \")" "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [ "$RQ_VM_STATUS" = 0 ] && [ "$got" = "1000 true true true true | 4 | 0" ]; then
        pass "req/sqreq attached mid-flight: the same allocations, DELAY, SEM and breakdowns; requests begun before it are left out (began_before_trace)"
    else fail "req/sqreq mid-flight" "status $RQ_STATUS, VM $RQ_VM_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi

    "$RQ_TOOLS/sqreq" -p 999999999 >"$RQ_TMP/out" 2>"$RQ_TMP/err"
    RQ_STATUS=$?
    if [ "$RQ_STATUS" != 0 ] && grep -q '^sqreq: ' "$RQ_TMP/err"; then
        pass "req/sqreq -p of no process: exit $RQ_STATUS, '$(head -1 "$RQ_TMP/err")'"
    else fail "req/sqreq dead PID" "status $RQ_STATUS: $(cat "$RQ_TMP/err")"; fi
}

# ---- sqio ------------------------------------------------------------------------

# rq_io TOOL-ARGS...: FileIO.som under sqio; its file to read back out of the page cache.
rq_io() {
    rm -f "$RQ_TMP/w.bin"
    dd if=/dev/zero of="$RQ_TMP/r.bin" bs=4096 count=64 2>/dev/null
    sync "$RQ_TMP/r.bin"
    dd if="$RQ_TMP/r.bin" iflag=nocache count=0 2>/dev/null
    RQ_VM_ARGS=("$RQ_TMP/w.bin" "$RQ_TMP/r.bin")
    rq_run FileIO sqio "$@"
    RQ_VM_ARGS=()
}

RQ_IO_ROW='def row(m; op; kind): ([.rows[] | select(.method == m and .op == op and .kind == kind)] | .[0] // {});'

rq_sqio() {
    local got disk
    rq_io -j
    got=$(jq -r "$RQ_IO_ROW"'
        [(row("FileIO>>writeBlocks:"; "write"; "file") | "\(.calls) \(.bytes) \(.errors)"),
         (row("FileIO>>writeBlocks:"; "open"; "file") | .calls), (row("FileIO>>writeBlocks:"; "close"; "file") | .calls),
         (row("FileIO>>readBack:"; "read"; "file") | "\(.calls) \(.bytes)"),
         (row("FileIO>>serve:"; "read"; "tcp") | "\(.bytes) \(.waits) \(.wait_ns >= 15000000)"),
         (row("FileIO>>serve:"; "accept"; "tcp") | .waits), (row("[] in FileIO>>serve:"; "write"; "tcp") | "\(.calls) \(.bytes)"),
         ([.rows[] | select(.method | test("^(IOHandle|File|Socket|ServerSocket)( class)?>>"))] | length)] | map(tostring) | join(" | ")' "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "100 409600 0 | 1 | 1 | 64 262144 | 10 10 true | 1 | 10 10 | 0" ]; then
        pass "req/sqio: writeBlocks: 100 file writes of 409,600 bytes, one open and close; readBack: 64 reads; serve: 10 TCP bytes and 10 waits of 2 ms or more; charged past the library"
    else fail "req/sqio" "status $RQ_STATUS, VM $RQ_VM_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi

    # the read of a file out of the page cache: its pages came from the disk, for readBack:
    disk=$(jq -r "$RQ_IO_ROW"'row("FileIO>>readBack:"; "read"; "file") | .disk_bytes' "$RQ_TMP/out" 2>&1)
    if [ "$(stat -f -c %T "$RQ_TMP")" = tmpfs ]; then
        skip "req/sqio disk reads" "$RQ_TMP is on tmpfs: its files are never read from a disk"
    elif [ "$disk" = 262144 ]; then
        pass "req/sqio: the 256 KiB read out of the page cache are 256 KiB from the disk, charged to readBack:"
    else fail "req/sqio disk reads" "disk_bytes '$disk'"; fi

    rq_io --library -L
    if [ "$RQ_STATUS" = 0 ] && grep -qE '^[0-9]+ +IOHandle>>write:timeout: +write +file +100 +0 +409600 ' "$RQ_TMP/out" &&
        [ "$(awk '/^IOHandle>>write:timeout: write \(file\)/ { on = 1; next } on && / -> / { n += $5 } on && /^$/ { on = 0 } END { print n }' "$RQ_TMP/out")" = 100 ]; then
        pass "req/sqio --library -L: the 100 writes charged to IOHandle>>write:timeout: (where write: sends them), in its latency histogram"
    else fail "req/sqio --library -L" "status $RQ_STATUS: $(head -6 "$RQ_TMP/out")"; fi

    # attached to a VM in full flight: every write is 4,096 bytes, 100 per open
    local go="$RQ_TMP/go.$RANDOM" stop="$RQ_TMP/stop.$RANDOM" vm
    touch "$go"
    rm -f "$stop"
    "$RQ_TMP/sqvm" "$RQ_DIR/FileIO.som" "$go" "$RQ_TMP/w.bin" "$RQ_TMP/r.bin" "$stop" >"$RQ_TMP/vm.out" 2>&1 </dev/null &
    vm=$!
    sleep 0.5
    timeout -s KILL "$RQ_TIMEOUT" "$RQ_TOOLS/sqio" -j -d 1 -p "$vm" >"$RQ_TMP/out" 2>"$RQ_TMP/err" </dev/null
    RQ_STATUS=$?
    touch "$stop"
    wait "$vm"
    got=$(jq -r "$RQ_IO_ROW"'(row("FileIO>>writeBlocks:"; "write"; "file")) as $w | (row("FileIO>>writeBlocks:"; "open"; "file").calls) as $o |
        [$w.bytes == 4096 * $w.calls, $w.calls >= 100 * ($o - 1), $w.calls <= 100 * ($o + 1), $o > 10, $w.errors, .lost] | map(tostring) | join(" ")' "$RQ_TMP/out" 2>&1)
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "true true true true 0 0" ]; then
        pass "req/sqio attached mid-flight: 4,096 bytes a write, 100 writes an open"
    else fail "req/sqio mid-flight" "status $RQ_STATUS: '$got' $(head -3 "$RQ_TMP/err")"; fi
}

# ---- sqreq on examples/http --------------------------------------------------------

# The HTTP service under wrk load on GET /static (before and while the tool is attached),
# sqreq attached mid-flight; once it is tracing, tests/req/drive_http.py makes 30 GET
# /hello, 20 PUT /kv, 10 GET /kv and 5 GET /work on its own connection: those routes'
# counts are exactly these, whatever the load on /static beside them.
rq_service() {
    local srv port load got
    command -v wrk >/dev/null || { skip "req/sqreq on examples/http" "needs wrk"; return; }
    "$RQ_TMP/sqvm" -cp examples/http examples/http/Server.som 0 >"$RQ_TMP/srv.out" 2>&1 </dev/null &
    srv=$!
    wait_line "$RQ_TMP/srv.out" /dev/null '^listening on ' "$srv"
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$RQ_TMP/srv.out")
    wrk -t1 -c4 -d8s "http://127.0.0.1:$port/static/hello.txt" >"$RQ_TMP/wrk.out" 2>&1 &
    load=$!
    sleep 1
    start_bg "$RQ_TMP/out" "$RQ_TMP/err" "$RQ_TIMEOUT" "$RQ_TOOLS/sqreq" -j -p "$srv"
    RQ_TOOL=$BG_PID
    wait_line "$RQ_TMP/out" "$RQ_TMP/err" '^Tracing ' "$RQ_TOOL"
    python3 tests/req/drive_http.py "$port" 30 20 10 5 >"$RQ_TMP/drive.out" 2>&1
    got="drive $?"
    kill -INT "$RQ_TOOL"
    wait "$RQ_TOOL"
    RQ_STATUS=$?
    wait "$load"
    kill "$srv"
    wait "$srv" 2>/dev/null
    got="$got | $(jq -r '[.routes[] | select(.route | test("/static") | not) | "\(.route)=\(.count)"] | sort | join(" ")' "$RQ_TMP/out" 2>&1)"
    got="$got | $(jq -r '[.routes[] | select(.route | test("/static")) | .count > 0] | tostring' "$RQ_TMP/out" 2>&1)"
    if [ "$RQ_STATUS" = 0 ] && [ "$got" = "drive 0 | GET /hello=30 GET /kv=10 GET /work=5 PUT /kv=20 | [true]" ]; then
        pass "req/sqreq on examples/http attached mid-flight under load: 30, 20, 10, 5 requests by route exactly"
    else fail "req/sqreq on examples/http" "status $RQ_STATUS: '$got' $(head -3 "$RQ_TMP/err") $(cat "$RQ_TMP/drive.out")"; fi
}

if [ "$(id -u)" != 0 ]; then
    skip "req" "needs root (BPF programs, uprobes)"
elif ! command -v jq >/dev/null; then
    skip "req" "jq is not installed"
elif ! make -s tools >/dev/null 2>&1; then
    fail "req/build" "make tools failed"
else
    mkdir -p "$RQ_TMP"
    cp "$VM" "$RQ_TMP/sqvm"
    rq_sqreq
    rq_sqio
    rq_service
fi
