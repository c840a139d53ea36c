# SPDX-License-Identifier: BSD-2-Clause
# tests/prom_abuse.sh - sqstat as an exporter under abuse, against a real Prometheus
# scraping it every second (tests/prom/abuse.py drives it): a VM with 10,000 distinct
# routes of 4 KiB and 1,000 statuses (tests/prom/Routes.som), a fake VM binary whose
# 10,000 children flood vm__start (tests/family/fakestart.c), and 64 clients that send
# one byte and hold on. Every scrape must succeed (up 1, under 1 s) and every response
# be under 10 MB. Sourced by tests/run.sh (its pass/fail/skip, $VM, $TMP); needs root.
# Every server listens on a port the kernel picks, on 127.0.0.1; the driver runs under
# a timeout and its processes die with it.

PA_TMP="$TMP/prom_abuse"

. tests/prom/lib.sh

pa_main() {
    pr_ready prom_abuse || return
    mkdir -p "$PA_TMP"
    cp "$VM" "$PA_TMP/sqvm"
    if ! cc -O2 -Wall -Ibuild/gen -o "$PA_TMP/fakestart" tests/family/fakestart.c 2>"$PA_TMP/cc.err"; then
        fail "prom_abuse/fakestart" "cannot build it: $(head -3 "$PA_TMP/cc.err")"
        return
    fi
    timeout -s KILL 90 python3 tests/prom/abuse.py --vm "$PA_TMP/sqvm" --fake "$PA_TMP/fakestart" \
        --sqstat build/tools/sqstat --prometheus "$(command -v prometheus)" --dir tests/prom --tmp "$PA_TMP" \
        >"$PA_TMP/results" 2>"$PA_TMP/driver.err"
    pr_results prom_abuse "$PA_TMP/results" "$PA_TMP/driver.err"
}

pa_main
