# SPDX-License-Identifier: BSD-2-Clause
# tests/service.sh - the HTTP service of examples/http through real sockets on 127.0.0.1:
# tests/service/driver.py starts the server (port 0, a 1 s idle timeout, a 3 s request
# deadline) and checks every route's exact answers, pipelining and keep-alive, malformed
# requests, the size limits on both sides of each, slowloris clients beside prompt ones,
# clients that leave mid-response, and 10,000 sequential connections with a steady
# descriptor count and bounded RSS; the service under abuse (review findings 2, 9, 10,
# 13): invalid UTF-8 in a header (one request, one answer), 1 MiB in 1 KiB pieces,
# clients that never read (closed after the request deadline), PUTs until the store is
# full (507), 10,000 concurrent idle connections, /hello under 100 ms but for one collection pause; as root, the request probes counted by route and
# status under bpftrace. One result per case. Files and sockets in the VM
# alone are the io tier's (tests/io/Files.som, FileErrors.som, Echo.som with 100
# concurrent clients). Sourced by tests/run.sh (uses pass/fail/skip, $VM, $TMP).

service_tier() {
    local line out="$TMP/service.out" status
    [ -n "$FILTER" ] && [[ "service" != *"$FILTER"* ]] && return
    command -v python3 >/dev/null || { skip "service" "needs python3"; return; }
    timeout 120 python3 tests/service/driver.py "$VM" >"$out" 2>&1 </dev/null
    status=$?
    while IFS= read -r line; do
        case "$line" in
            "ok "*) pass "service/${line#ok }" ;;
            "FAIL "*) fail "service/${line#FAIL }" ;;
            "skip "*) line=${line#skip }; skip "service/${line%%: *}" "${line#*: }" ;;
            *) fail "service: unexpected output" "$line" ;;
        esac
    done <"$out"
    [ "$status" = 0 ] || fail "service/driver" "exit status $status"
}

service_tier
