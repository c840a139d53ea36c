#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""scripts/cdptrace.py - load a page in headless Chromium and record Chromium's trace of it
through the DevTools Protocol's Tracing domain, over --remote-debugging-pipe (the protocol
on file descriptors 3 and 4, NUL-separated JSON: no WebSocket, nothing to install).

    scripts/cdptrace.py URL OUT.json [--wait EXPR] [--timeout S] [--chromium PATH]

Starts tracing (blink.user_timing, devtools.timeline, loading, netlog's request headers),
opens URL, waits for the page's promise EXPR (default window.traceDone) to settle, ends
tracing and writes Chromium's JSON trace to OUT.json. Prints the promise's value. The
trace's ts are Chromium's TimeTicks in microseconds: CLOCK_MONOTONIC on Linux, the clock
of sqvm's probes and sqflow's trace."""
import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CATEGORIES = ["blink.user_timing", "devtools.timeline", "loading", "netlog",
              "disabled-by-default-netlog", "__metadata"]


class Pipe:
    def __init__(self, chromium, timeout, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands on fd 3 and writes answers on fd 4
        def fds():
            # through free fds above 4 first: one of the pipe's may be 3 or 4 already
            r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 5)
            w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 5)
            os.dup2(r, 3)
            os.dup2(w, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--user-data-dir=" + profile,
             "--remote-debugging-pipe", "about:blank"],
            close_fds=False, preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("CDP_DEBUG") else subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.deadline = time.monotonic() + timeout

    def read_message(self):
        while b"\0" not in self.buf:
            if time.monotonic() > self.deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self.read_message()
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method):
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self.read_message()
            if m.get("method") == method:
                return m
            self.events.append(m)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("out")
    ap.add_argument("--wait", default="window.traceDone")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    a = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="cdptrace-")
    cdp = Pipe(a.chromium, a.timeout, profile)
    try:
        cdp.send("Tracing.start", {"transferMode": "ReturnAsStream", "traceConfig": {
            "recordMode": "recordAsMuchAsPossible", "includedCategories": CATEGORIES}})
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        cdp.send("Page.enable", session=session)
        cdp.send("Page.navigate", {"url": a.url}, session=session)
        cdp.wait_event("Page.loadEventFired")
        r = cdp.send("Runtime.evaluate", {"expression": a.wait, "awaitPromise": True,
                                          "returnByValue": True}, session=session)
        if "exceptionDetails" in r:
            raise RuntimeError("the page failed: %s" % json.dumps(r["exceptionDetails"])[:500])
        cdp.send("Tracing.end")
        stream = cdp.wait_event("Tracing.tracingComplete")["params"]["stream"]
        with open(a.out, "wb") as out:
            while True:
                chunk = cdp.send("IO.read", {"handle": stream, "size": 1 << 20})
                data = chunk.get("data", "")
                if chunk.get("base64Encoded"):
                    out.write(base64.b64decode(data))
                else:
                    out.write(data.encode())
                if chunk.get("eof"):
                    break
        cdp.send("IO.close", {"handle": stream})
        print(json.dumps(r.get("result", {}).get("value")))
        try:
            cdp.send("Browser.close")
        except (EOFError, RuntimeError):
            pass
    finally:
        try:
            cdp.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cdp.proc.kill()
            cdp.proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, EOFError, TimeoutError, KeyError) as e:
        print("cdptrace: %s" % e, file=sys.stderr)
        sys.exit(1)
