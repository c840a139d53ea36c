# SPDX-License-Identifier: BSD-2-Clause
# tests/monitoring.sh - monitoring/'s Prometheus rules: `promtool check rules` on them,
# `promtool test rules` on each of their unit-test files (monitoring/*_test.yml), and the
# rules in a real Prometheus scraping a real `sqstat --listen` beside real VMs, where a
# seeded GC-heavy VM must fire the GC pause-ratio alerts and an exiting one
# SqvmStoppedReporting (tests/monitoring/firing.py drives it). Prometheus loads copies of
# the shipped rules whose time only is compressed, made here with sed: every rate window
# [5m] of the recording rules becomes [5s] and every `for:` of the alerts 0s, so that
# alerts meant to wait minutes fire in seconds; thresholds and expressions are the
# shipped ones. Sourced by tests/run.sh (its pass/fail/skip, $VM, $TMP); the last case
# needs root. Every server listens on a port the kernel picks, on 127.0.0.1; the driver
# runs under a timeout and its processes die with it.

MON_TMP="$TMP/monitoring"
MON_RULES="monitoring/recording.yml monitoring/alerts.yml"

. tests/prom/lib.sh

# mon_promtool NAME ARGS...: `promtool ARGS` as a case, its output on failure (and 1).
mon_promtool() {
    local name=$1 out
    shift
    if out=$(promtool "$@" 2>&1); then pass "monitoring/$name"; else fail "monitoring/$name" "$out"; return 1; fi
}

# mon_compress SED FILE: FILE with the sed expression applied, into $MON_TMP; fails
# (answers 1) if the expression changed nothing, so that a reworded rule file cannot
# leave the copy slow without saying so.
mon_compress() {
    local out
    out="$MON_TMP/$(basename "$2")"
    sed -E "$1" "$2" >"$out"
    if cmp -s "$2" "$out"; then
        fail "monitoring/compressed copy of $2" "sed '$1' changed nothing in it"
        return 1
    fi
}

mon_main() {
    local t n
    if ! command -v promtool >/dev/null 2>&1; then
        if [ "${CI:-}" = true ]; then fail monitoring "promtool not installed (scripts/deps.sh installs Debian's prometheus)"
        else skip monitoring "promtool not installed (scripts/deps.sh installs Debian's prometheus)"; fi
        return
    fi
    # shellcheck disable=SC2086
    mon_promtool "promtool check rules" check rules $MON_RULES
    for t in monitoring/*_test.yml; do
        mon_promtool "promtool test rules $(basename "$t")" test rules "$t"
    done

    pr_ready monitoring || return
    mkdir -p "$MON_TMP"
    cp "$VM" "$MON_TMP/sqvm"
    mon_compress 's/\[5m\]/[5s]/g' monitoring/recording.yml || return
    mon_compress 's/^( +for: ).*/\10s/' monitoring/alerts.yml || return
    mon_promtool "promtool check rules on the compressed copies" check rules "$MON_TMP/recording.yml" \
        "$MON_TMP/alerts.yml" || return
    # shellcheck disable=SC2086
    n=$(cat $MON_RULES | grep -cE '^ *- (record|alert):')
    timeout -s KILL 60 python3 tests/monitoring/firing.py --vm "$MON_TMP/sqvm" --sqstat build/tools/sqstat \
        --prometheus "$(command -v prometheus)" --churn tests/monitoring/Churn.som --sleeper tests/family/Sleeper.som \
        --tmp "$MON_TMP" --rules "$MON_TMP/recording.yml" "$MON_TMP/alerts.yml" --count "$n" \
        >"$MON_TMP/results" 2>"$MON_TMP/driver.err"
    pr_results monitoring "$MON_TMP/results" "$MON_TMP/driver.err"
}

mon_main
