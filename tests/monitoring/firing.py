#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/monitoring/firing.py - monitoring/'s rules in a real Prometheus (Debian's),
scraping a real `sqstat --listen` every second beside two real VMs: Churn.som, which
pauses in the collector most of its time, and tests/family/Sleeper.som, which does
nothing. Run by tests/monitoring.sh, which hands it the rule files to load: the
shipped ones with only their time compressed (rate windows of 5 s, every `for:` 0 s).

It asks Prometheus's HTTP API (/api/v1/rules, /api/v1/alerts) that every rule loaded
and evaluates without error; that of the alerts about these two VMs and this sqstat,
exactly SqvmGCPauseRatioHigh and SqvmGCPauseRatioCritical fire, for Churn, with the
runbook for its pid (and none for the Sleeper, and no GC-pause p99 alert: Churn's
pauses are well under 100 ms); then, once the Sleeper exits, that SqvmStoppedReporting
fires for it, with its command line, and nothing else changes.

Ports are the kernel's (every server listens on 127.0.0.1:0); every process it starts
dies with it (PR_SET_PDEATHSIG), and tests/monitoring.sh runs it under a timeout.
Other VMs on the host are sqstat's too: only alerts about this test's VMs and this
sqstat (its pid labels, its instance, SqstatAbsent) are looked at. Prints one line per
case: PASS name, FAIL name <TAB> detail."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "prom"))
from promlib import check, drive, start_prometheus, start_sqstat, wait_for  # noqa: E402

GC_ALERTS = {"SqvmGCPauseRatioHigh": "warning", "SqvmGCPauseRatioCritical": "critical"}


def ours(alerts, pids, instance):
    """{(alertname, pid or None): alert} of the alerts firing about this test's VMs (by
    pid) and this sqstat (by instance, and SqstatAbsent, which has neither); sqstat's
    lost observations and dropped VMs count the other VMs on the host too, and are left
    out."""
    out = {}
    for a in alerts:
        l = a["labels"]
        if a["state"] != "firing" or l["alertname"] in ("SqstatLostObservations", "SqstatDroppedVMs"):
            continue
        if l.get("pid") in pids or (l.get("pid") is None and l.get("instance") == instance) or \
                l["alertname"] == "SqstatAbsent":
            out[(l["alertname"], l.get("pid"))] = a
    return out


def wait_alerts(prom, want, pids, instance, timeout):
    """ours() once its keys are want, or as they are after timeout."""
    def reached():
        o = ours(prom.api("alerts")["alerts"], pids, instance)
        return o if set(o) == want else None
    try:
        return wait_for(f"the alerts {sorted(want)}", reached, timeout)
    except TimeoutError:
        return ours(prom.api("alerts")["alerts"], pids, instance)


def check_rules(prom, want):
    """Every rule loaded, and evaluated at least once without error."""
    def evaluated():
        rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
        return rules if rules and all(r["health"] == "ok" for r in rules) else None
    try:
        rules = wait_for("every rule evaluated", evaluated, 10)
    except TimeoutError:
        rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
    bad = [(r["name"], r["health"], r.get("lastError")) for r in rules if r["health"] != "ok"]
    check(f"prometheus: the {want} rules loaded, each evaluated without error",
          len(rules) == want and not bad, f"{len(rules)} rules, unhealthy: {bad}")


def check_gc_alerts(prom, churn, sleeper, instance):
    """Exactly the two GC pause-ratio alerts, for Churn."""
    pids = {str(churn.pid), str(sleeper.pid)}
    want = {(name, str(churn.pid)) for name in GC_ALERTS}
    got = wait_alerts(prom, want, pids, instance, 20)
    ratio = prom.value(f'sqvm:gc_pause_seconds:ratio_rate5m{{pid="{churn.pid}"}}')
    runbook = f"sudo sqgc -p {churn.pid} -d 30s; then sudo sqalloc -p {churn.pid} -b -d 30s for who allocates"
    ok = set(got) == want and all(
        got[k]["labels"]["severity"] == GC_ALERTS[k[0]] and got[k]["labels"]["job"] == "sqstat" and
        got[k]["labels"]["instance"] == instance and got[k]["annotations"]["runbook"] == runbook for k in want)
    check(f"prometheus: SqvmGCPauseRatioHigh (warning) and SqvmGCPauseRatioCritical (critical) fire for Churn "
          f"(pause ratio {ratio if ratio is None else round(ratio, 3)}), with sqgc's runbook for its pid; no "
          f"other alert about these VMs or this sqstat", ok, f"firing {sorted(got)}, wanted {sorted(want)}: "
          f"{[(a['labels'], a['annotations'].get('runbook')) for a in got.values()]}")
    p99 = prom.value(f'sqvm:gc_pause_seconds:p99_rate5m{{pid="{churn.pid}",kind="young"}}')
    check(f"prometheus: Churn's young-pause p99 is recorded from sqstat's buckets ({p99} s), under "
          f"SqvmGCPauseP99High's 100 ms", p99 is not None and 0 < p99 < 0.1, p99)
    return got


def check_stopped(prom, churn, sleeper, stop, instance, before):
    """The Sleeper exits: SqvmStoppedReporting fires for it, and nothing else changes."""
    open(stop, "w").close()
    sleeper.wait(timeout=10)
    pids = {str(churn.pid), str(sleeper.pid)}
    want = set(before) | {("SqvmStoppedReporting", str(sleeper.pid))}
    got = wait_alerts(prom, want, pids, instance, 15)
    a = got.get(("SqvmStoppedReporting", str(sleeper.pid)))
    cmdline = " ".join(sleeper.args)
    check("prometheus: once the Sleeper exits, SqvmStoppedReporting fires for its pid with its command line, "
          "beside the GC alerts, and nothing else", set(got) == want and a is not None and
          a["labels"]["cmdline"] == cmdline and a["labels"]["severity"] == "warning",
          f"firing {sorted(got)}, wanted {sorted(want)}; cmdline {a and a['labels'].get('cmdline')!r} "
          f"vs {cmdline!r}")


def run(procs, a):
    stops = [os.path.join(a.tmp, n) for n in ("churn.stop", "sleeper.stop")]
    churn = procs.start("churn", [a.vm, "--young", "256K", a.churn, stops[0]])
    sleeper = procs.start("sleeper", [a.vm, a.sleeper, stops[1]])
    _, port = start_sqstat(procs, a.sqstat, ["--vm", a.vm])
    prom = start_prometheus(procs, a.prometheus, a.tmp, {"sqstat": port}, rule_files=a.rules)
    instance = f"127.0.0.1:{port}"
    check_rules(prom, a.count)
    fired = check_gc_alerts(prom, churn, sleeper, instance)
    check_stopped(prom, churn, sleeper, stops[1], instance, fired)
    open(stops[0], "w").close()
    churn.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vm", "sqstat", "prometheus", "churn", "sleeper", "tmp"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--rules", required=True, nargs="+")
    ap.add_argument("--count", required=True, type=int, help="how many rules the files hold")
    a = ap.parse_args()
    drive("monitoring", a.tmp, lambda procs: run(procs, a))


if __name__ == "__main__":
    main()
