#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# tests/req/drive_http.py PORT HELLO PUTS GETS WORKS: a fixed client for examples/http
# (tests/req.sh): on one keep-alive connection, HELLO GET /hello, PUTS PUT /kv/k,
# GETS GET /kv/k and WORKS GET /work?n=50, in that order; exits 1 unless every answer is
# a 200 (or a 201/204 for a PUT), so that the requests sqreq counts are exactly these.
import http.client
import sys

port, hello, puts, gets, works = (int(a) for a in sys.argv[1:6])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
plan = [("GET", "/hello", None)] * hello + [("PUT", "/kv/k", b"value")] * puts + \
    [("GET", "/kv/k", None)] * gets + [("GET", "/work?n=50", None)] * works
for method, path, body in plan:
    conn.request(method, path, body=body)
    resp = conn.getresponse()
    resp.read()
    if resp.status not in (200, 201, 204):
        sys.exit(f"drive_http.py: {method} {path}: status {resp.status}")
conn.close()
