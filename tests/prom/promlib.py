# SPDX-License-Identifier: BSD-2-Clause
"""tests/prom/promlib.py - what the Prometheus tiers' drivers share (tests/prom/promtest.py
for tests/prom.sh, tests/prom/abuse.py for tests/prom_abuse.sh, tests/monitoring/firing.py
for tests/monitoring.sh): their processes, which
die with the driver (PR_SET_PDEATHSIG); an HTTP client by hand; Prometheus's HTTP API;
the exposition parsed; sqstat and a real Prometheus started on ports the kernel picks,
on 127.0.0.1. Results are lines: PASS name, FAIL name <TAB> detail, SKIP name <TAB> reason."""
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

CTYPE = "text/plain; version=0.0.4; charset=utf-8"

_libc = ctypes.CDLL(None, use_errno=True)


def report(kind, name, detail=""):
    detail = " ".join(str(detail).split())[:600]
    print(f"{kind} {name}" + (f"\t{detail}" if detail else ""), flush=True)


def check(name, ok, detail=""):
    report("PASS" if ok else "FAIL", name, "" if ok else detail)
    return ok


# ---- processes ----------------------------------------------------------------------

class Procs:
    """Every process the test starts; each dies when the test does (PR_SET_PDEATHSIG)."""

    def __init__(self, tmp):
        self.tmp, self.procs = tmp, []

    def start(self, name, argv, stdin=subprocess.DEVNULL):
        out = open(os.path.join(self.tmp, name + ".out"), "wb")
        err = open(os.path.join(self.tmp, name + ".err"), "wb")
        p = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=err,
                             preexec_fn=lambda: _libc.prctl(1, signal.SIGKILL))
        p.name = name
        self.procs.append(p)
        return p

    def text(self, name, which="out"):
        with open(os.path.join(self.tmp, f"{name}.{which}"), errors="replace") as f:
            return f.read()

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def tier_failed(procs, tier, e):
    """A step of a driver that could not happen: its case fails, saying which, with the
    servers' last words."""
    logs = " | ".join(f"{p.name}: {procs.text(p.name, 'err')[-300:]}" for p in procs.procs)
    check(f"{tier} tier", False, f"{type(e).__name__}: {e} -- {logs}")


def drive(tier, tmp, steps):
    """steps(procs), the driver's body, with its processes under tmp: a step that could
    not happen is tier_failed's, and every process is stopped at the end."""
    procs = Procs(tmp)
    try:
        steps(procs)
    except Exception as e:
        tier_failed(procs, tier, e)
    finally:
        procs.stop_all()


def wait_for(what, fn, timeout):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def listen_port(pid):
    """The TCP port process pid listens on, from /proc (its sockets' inodes in LISTEN)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    return int(cols[1].split(":")[1], 16)
    return None


# ---- HTTP, by hand --------------------------------------------------------------------

class Conn:
    """A client connection that reads responses one by one (pipelined ones too)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.s.close()

    def send(self, raw):
        self.s.sendall(raw)

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed by the server after {self.buf[:80]!r}")
        self.buf += chunk

    def response(self, head=False):
        """(status, headers (lower-case names), body) of the next response."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        top, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = top.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = 0 if head else int(headers.get("content-length", 0))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return int(lines[0].split()[1]), headers, body

    def closed_by_server(self, timeout=3):
        """Does the server close the connection (with nothing more to say)?"""
        self.s.settimeout(timeout)
        try:
            return not self.buf and self.s.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return False


def request(port, raw, head=False):
    with Conn(port) as c:
        c.send(raw)
        return c.response(head)


def get(port, path="/metrics"):
    return request(port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())


# ---- Prometheus's HTTP API ------------------------------------------------------------

class Prom:
    """Prometheus's HTTP API on 127.0.0.1:port."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def api(self, path, args=None):
        """The data of a GET of /api/v1/PATH?ARGS (an error if it did not succeed)."""
        url = f"{self.base}/api/v1/{path}" + (f"?{urllib.parse.urlencode(args)}" if args else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            d = json.load(r)
        if d["status"] != "success":
            raise RuntimeError(d)
        return d["data"]

    def query(self, q, at=None):
        args = {"query": q}
        if at is not None:
            args["time"] = f"{at:.3f}"
        return self.api("query", args)["result"]

    def value(self, q, at=None):
        """The one value of an instant query, or None."""
        r = self.query(q, at)
        return float(r[0]["value"][1]) if len(r) == 1 else None

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False


# ---- the metrics text ---------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse_metrics(text):
    """[(name, {label: value (unescaped)}, value string)] of an exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"not a sample line: {line!r}")
        labels = {k: re.sub(r'\\(.)', lambda e: "\n" if e.group(1) == "n" else e.group(1), v)
                  for k, v in LABEL.findall(m.group(3) or "")}
        out.append((m.group(1), labels, m.group(4)))
    return out


def start_sqstat(procs, sqstat, args, name="sqstat"):
    """sqstat --listen 127.0.0.1:0 ARGS; (the process, its port, from its Tracing line)."""
    sq = procs.start(name, [sqstat, "--listen", "127.0.0.1:0"] + args)
    m = wait_for(f"{name}'s URL", lambda: re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics",
                                                     procs.text(name)), 10)
    return sq, int(m.group(1))


def start_prometheus(procs, prometheus, tmp, jobs, interval="1s", rule_files=(), flags=()):
    """A Prometheus scraping each job {name: port} on 127.0.0.1 every interval (its
    scrape timeout the same), its data under tmp, with the rule files given (evaluated
    every interval too) and more command-line flags; its API once it is ready."""
    conf = os.path.join(tmp, "prometheus.yml")
    with open(conf, "w") as f:
        f.write(f"global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n")
        if rule_files:
            f.write(f"  evaluation_interval: {interval}\nrule_files:\n" + "".join(f"  - {r}\n" for r in rule_files))
        f.write("scrape_configs:\n")
        for job, port in jobs.items():
            f.write(f"  - job_name: {job}\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n")
    pr = procs.start("prometheus", [prometheus, f"--config.file={conf}", "--web.listen-address=127.0.0.1:0",
                                    f"--storage.tsdb.path={os.path.join(tmp, 'data')}", "--log.level=warn"] + list(flags))
    prom = Prom(wait_for("Prometheus's port", lambda: listen_port(pr.pid), 20))
    wait_for("Prometheus ready", prom.ready, 20)
    return prom
