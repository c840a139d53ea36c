# SPDX-License-Identifier: BSD-2-Clause
# tests/browser.sh - one timeline across the browser and the VM: headless Chromium
# (scripts/cdptrace.py, over the DevTools Protocol) loads examples/http's
# /static/trace.html, whose script makes 100 fetches of /work?n=..., each with its own
# W3C traceparent, while sqflow --merge traces the server; then two GET /hello with a
# malformed and with no traceparent. tests/browser/check_merge.py checks the merged trace:
# 100 fetch slices and 100 request slices with the same trace ids, 100 flows linking
# them, each request begun within its fetch (one clock), its answer written before the
# fetch ended and Work>>handle: run within it, the two others with no trace id. And
# --merge given what is not a browser's trace. Sourced by tests/run.sh (uses its
# pass/fail/skip, start_bg, wait_line, $VM and $TMP). Needs root, python3, jq, curl and
# Debian's chromium (scripts/deps.sh installs them).

BR_TMP="$TMP/browser"
BR_FETCHES=100
mkdir -p "$BR_TMP"

# br_server: examples/http on a port of the system's choosing; BR_SRV, BR_PORT.
br_server() {
    start_bg "$BR_TMP/srv.out" "$BR_TMP/srv.err" 300 "$VM" -cp examples/http examples/http/Server.som 0
    BR_SRV=$BG_PID
    BR_PORT=
    wait_line "$BR_TMP/srv.out" "$BR_TMP/srv.err" '^listening on ' "$BR_SRV" &&
        BR_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$BR_TMP/srv.out")
    # the VM itself: timeout's child
    BR_VM=$(pgrep -P "$BR_SRV" -x sqvm || true)
}

# br_merge NAME MERGE_ARG: sqflow -d 1 --merge MERGE_ARG on the server; BR_STATUS.
br_merge() {
    timeout -s KILL 30 build/tools/sqflow -p "$BR_VM" -d 1 --merge "$2" >"$BR_TMP/$1.json" 2>"$BR_TMP/$1.err" </dev/null
    BR_STATUS=$?
}

br_server
if [ -z "$BR_PORT" ] || [ -z "$BR_VM" ]; then
    fail "browser/server" "examples/http did not start: $(head -c 300 "$BR_TMP/srv.err")"
else
    # a trace that cannot be merged: said, the server's trace still written whole
    br_merge missing "$BR_TMP/no-such-trace.json"
    if [ "$BR_STATUS" != 0 ] && grep -q "cannot open $BR_TMP/no-such-trace.json" "$BR_TMP/missing.err" &&
        jq -e '.otherData.tool == "sqflow"' "$BR_TMP/missing.json" >/dev/null 2>&1; then
        pass "browser/merge missing file"
    else
        fail "browser/merge missing file" "status $BR_STATUS: $(head -c 300 "$BR_TMP/missing.err")"
    fi
    # (the input has a name of its own: br_merge writes its output to $BR_TMP/cut.json)
    printf '{"traceEvents":[{"ph":"b",' >"$BR_TMP/cut-input.json"
    br_merge cut "$BR_TMP/cut-input.json"
    if [ "$BR_STATUS" != 0 ] && grep -q "is not JSON: expected a member name at byte 26" "$BR_TMP/cut.err" &&
        jq -e '.otherData.tool == "sqflow"' "$BR_TMP/cut.json" >/dev/null 2>&1; then
        pass "browser/merge not JSON"
    else
        fail "browser/merge not JSON" "status $BR_STATUS: $(head -c 300 "$BR_TMP/cut.err")"
    fi
    # a FIFO is refused, not waited on for ever
    rm -f "$BR_TMP/fifo"
    mkfifo "$BR_TMP/fifo"
    br_merge fifo "$BR_TMP/fifo"
    if [ "$BR_STATUS" != 0 ] && [ "$BR_STATUS" != 137 ] && grep -q "is not a regular file" "$BR_TMP/fifo.err"; then
        pass "browser/merge fifo"
    else
        fail "browser/merge fifo" "status $BR_STATUS: $(head -c 300 "$BR_TMP/fifo.err")"
    fi
    build/tools/sqflow -p "$BR_VM" --format=perfetto --merge x >/dev/null 2>"$BR_TMP/pf.err"
    if [ $? != 0 ] && grep -q "goes with --format=chrome only" "$BR_TMP/pf.err"; then
        pass "browser/merge perfetto refused"
    else
        fail "browser/merge perfetto refused" "$(head -c 300 "$BR_TMP/pf.err")"
    fi

    if ! command -v chromium >/dev/null 2>&1; then
        skip "browser/merged trace" "Debian's chromium is not installed (scripts/deps.sh installs it)"
    else
        rm -f "$BR_TMP/chromium.json"
        start_bg "$BR_TMP/merged.json" "$BR_TMP/merged.err" 120 build/tools/sqflow -p "$BR_VM" \
            --merge "$BR_TMP/chromium.json"
        tool=$BG_PID
        if ! wait_line "$BR_TMP/merged.json" "$BR_TMP/merged.err" '^Tracing ' "$tool"; then
            fail "browser/merged trace" "sqflow did not start: $(head -c 300 "$BR_TMP/merged.err")"
        else
            got=$(timeout -s KILL 90 python3 scripts/cdptrace.py --timeout 80 \
                "http://127.0.0.1:$BR_PORT/static/trace.html?count=$BR_FETCHES" "$BR_TMP/chromium.json" \
                2>"$BR_TMP/cdp.err")
            # served, with no trace: a malformed traceparent (upper-case hex) and none
            curl -s -o /dev/null -H 'traceparent: 00-4AD141D7BE97176511129E86AC14C6E5-4633f1683f3d2b3d-01' \
                "http://127.0.0.1:$BR_PORT/hello"
            curl -s -o /dev/null "http://127.0.0.1:$BR_PORT/hello"
            # the VM flushes a request's end record when it next goes idle, after curl has
            # its answer: give that flush time to reach sqflow before it detaches
            sleep 0.5
            kill -TERM "$tool" 2>/dev/null
            wait "$tool"
            status=$?
            if [ "$got" != "$BR_FETCHES" ]; then
                fail "browser/chromium" "the page answered '$got': $(head -c 300 "$BR_TMP/cdp.err")"
            else
                pass "browser/chromium"
                line="merged [0-9]* events of $BR_TMP/chromium.json: $BR_FETCHES fetches, $BR_FETCHES linked to their requests, $BR_FETCHES begun within their fetch"
                if [ "$status" = 0 ] && grep -q "$line" "$BR_TMP/merged.err"; then
                    pass "browser/merge summary"
                else
                    fail "browser/merge summary" "status $status: $(grep merged "$BR_TMP/merged.err" | head -c 300)"
                fi
                python3 tests/browser/check_merge.py "$BR_TMP/merged.json" "$BR_FETCHES" 2 >"$BR_TMP/check" 2>&1
                while read -r verdict name; do
                    case $verdict in
                    ok) pass "browser/$name" ;;
                    bad) fail "browser/${name%%:*}" "${name#*: }" ;;
                    esac
                done <"$BR_TMP/check"
                [ -s "$BR_TMP/check" ] && ! grep -qv '^\(ok\|bad\) ' "$BR_TMP/check" ||
                    fail "browser/check" "$(head -c 300 "$BR_TMP/check")"
                n=$(chrome_unnested "$BR_TMP/merged.json")
                [ "$n" = 0 ] && pass "browser/slices nest" || fail "browser/slices nest" "$n slices do not nest"
            fi
        fi
    fi
    kill -TERM "$BR_SRV" 2>/dev/null
    wait "$BR_SRV" 2>/dev/null
fi
