# SPDX-License-Identifier: BSD-2-Clause
# tests/prom.sh - sqstat as a Prometheus exporter against the real thing: Debian's
# Prometheus scrapes `sqstat --listen` and node_exporter, whose textfile collector reads
# `sqstat --prom`'s file, while tests/prom/Paced.som makes a known 5,000 calls and
# objects a second, and tests/prom/Requests.som known requests per route and status;
# the driver (tests/prom/promtest.py) asks Prometheus for rates, totals, the young-GC
# p99 and the requests' counts and quantiles over its HTTP API, and drives the
# exporter's HTTP server with well-behaved, slow and malformed clients. Sourced by tests/run.sh (its
# pass/fail/skip, $VM, $TMP). Needs root. Every server listens on a port the kernel
# picks, on 127.0.0.1; everything stops with the driver, which runs under a timeout.

PR_TMP="$TMP/prom"

. tests/prom/lib.sh

pr_main() {
    pr_ready prom || return
    mkdir -p "$PR_TMP"
    cp "$VM" "$PR_TMP/sqvm"
    timeout -s KILL 120 python3 tests/prom/promtest.py --vm "$PR_TMP/sqvm" --sqstat build/tools/sqstat \
        --prometheus "$(command -v prometheus)" --node-exporter "$(command -v prometheus-node-exporter)" \
        --promtool "$(command -v promtool)" --dir tests/prom --family tests/family --tmp "$PR_TMP" \
        >"$PR_TMP/results" 2>"$PR_TMP/driver.err"
    pr_results prom "$PR_TMP/results" "$PR_TMP/driver.err"
}

pr_main
