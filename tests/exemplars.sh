# SPDX-License-Identifier: BSD-2-Clause
# tests/exemplars.sh - sqstat --listen's OpenMetrics and the exemplars of its request
# histogram, against the real thing: a VM makes known requests (tests/prom/Exemplars.som),
# one of them alone in a slow bucket behind a 300 ms Delay; the driver
# (tests/prom/exemplars.py) negotiates the format over real sockets, reads the
# OpenMetrics with the Prometheus project's own parser (Debian's python3-prometheus-client)
# and the text format with promtool, checks each exemplar against the ids the VM gave,
# asks Debian's Prometheus (--enable-feature=exemplar-storage) for them over
# /api/v1/query_exemplars, sqreq --slowest for the slow request's id, and sqslow for its
# capture: the exemplar's request_id names the file. Sourced by
# tests/run.sh (its pass/fail/skip, $VM, $TMP). Needs root. Every server listens on a
# port the kernel picks, on 127.0.0.1; the driver runs under a timeout and its processes
# die with it.

EX_TMP="$TMP/exemplars"

. tests/prom/lib.sh

ex_main() {
    pr_ready exemplars || return
    if ! /usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
        if [ "${CI:-}" = true ]; then fail exemplars "python3-prometheus-client not installed (scripts/deps.sh installs it)"
        else skip exemplars "python3-prometheus-client not installed (scripts/deps.sh installs it)"; fi
        return
    fi
    if ! make -s sqreq sqslow >/dev/null 2>&1; then
        fail exemplars/build "make sqreq sqslow failed"
        return
    fi
    mkdir -p "$EX_TMP"
    cp "$VM" "$EX_TMP/sqvm"
    timeout -s KILL 90 python3 tests/prom/exemplars.py --vm "$EX_TMP/sqvm" --sqstat build/tools/sqstat \
        --sqreq build/tools/sqreq --sqslow build/tools/sqslow --prometheus "$(command -v prometheus)" --promtool "$(command -v promtool)" \
        --dir tests/prom --tmp "$EX_TMP" >"$EX_TMP/results" 2>"$EX_TMP/driver.err"
    pr_results exemplars "$EX_TMP/results" "$EX_TMP/driver.err"
}

ex_main
