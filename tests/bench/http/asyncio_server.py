#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The service of examples/http in idiomatic Python asyncio (stdlib only), the anchor
for make load: asyncio streams, one task per connection, keep-alive, Content-Length
bodies, the same limits (request line 8 KiB, header fields 32 KiB, body 1 MiB), the same
routes and answers.

    python3 asyncio_server.py PORT [STATIC_DIR]     prints "listening on 127.0.0.1:PORT"
"""
import asyncio
import json
import os
import sys

REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
           405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
           501: "Not Implemented", 505: "HTTP Version Not Supported"}
TYPES = {".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8", ".css": "text/css",
         ".js": "text/javascript", ".json": "application/json"}
IDLE, DEADLINE = 10.0, 10.0
STATIC = sys.argv[2] if len(sys.argv) > 2 else "examples/http/static"
store = {}


class Bad(Exception):
    def __init__(self, status):
        self.status = status


def response(status, body=None, ctype="text/plain", close=False, extra=""):
    head = "HTTP/1.1 %d %s\r\n" % (status, REASONS[status])
    if close:
        head += "Connection: close\r\n"
    head += extra
    if status == 204:
        return (head + "\r\n").encode()
    if body is None:
        body = (REASONS[status] + "\n").encode()
    return ("%sContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (head, ctype, len(body))).encode() + body


def work(query):
    n = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("n", "")
    if not n.isdigit() or not 1 <= int(n) <= 100000:
        return response(400, b"n must be an integer from 1 to 100000\n")
    n, seed, records = int(n), 42, []
    for i in range(1, n + 1):
        seed = (seed * 1103515245 + 12345) % 2147483648
        records.append({"id": i, "name": "item-%d" % i, "score": seed % 1000})
    records.sort(key=lambda r: (r["score"], r["id"]))
    return response(200, json.dumps({"n": n, "items": records}, separators=(",", ":")).encode(), "application/json")


def static(name):
    if not name or name == "." or ".." in name or "/" in name or "\0" in name:
        return response(404)
    try:
        with open(os.path.join(STATIC, name), "rb") as f:
            body = f.read()
    except OSError:
        return response(404)
    return response(200, body, TYPES.get(os.path.splitext(name)[1], "application/octet-stream"))


def kv(method, key, body):
    if not key or "/" in key:
        return response(404)
    if method == "PUT":
        fresh = key not in store
        store[key] = body
        return response(201 if fresh else 204)
    if key not in store:
        return response(404)
    if method == "GET":
        return response(200, store[key], "application/octet-stream")
    del store[key]
    return response(204)


ALLOWED = {"/hello": "GET", "/kv": "PUT, GET, DELETE", "/work": "GET", "/static": "GET"}


def route(method, target, body):
    path, _, query = target.partition("?")
    segment = "/" + path[1:].split("/", 1)[0]
    if segment == "/kv" and method in ("PUT", "GET", "DELETE"):
        return kv(method, path[4:], body)
    if method == "GET":
        if path == "/hello":
            return response(200, b"Hello, world")
        if path == "/work":
            return work(query)
        if segment == "/static":
            return static(path[8:])
    if segment in ALLOWED and path == segment or segment in ("/kv", "/static"):
        return response(405, extra="Allow: %s\r\n" % ALLOWED[segment])
    return response(404)


async def read_request(reader):
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE)
    lines = head[:-4].decode("latin-1").split("\r\n")
    if len(lines[0]) > 8192 or len(head) - len(lines[0]) > 32768 + 4:
        raise Bad(400)
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[0].isupper() or not parts[1].startswith("/"):
        raise Bad(400)
    if parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise Bad(505 if parts[2].startswith("HTTP/") and len(parts[2]) == 8 else 400)
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or " " in name or "\t" in name:
            raise Bad(400)
        headers[name.lower()] = value.strip()
    if parts[2] == "HTTP/1.1" and "host" not in headers:
        raise Bad(400)
    if "transfer-encoding" in headers:
        raise Bad(501)
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise Bad(400)
    if int(length) > 1048576:
        raise Bad(413)
    body = await asyncio.wait_for(reader.readexactly(int(length)), DEADLINE)
    conn = headers.get("connection", "").lower()
    keep = conn != "close" if parts[2] == "HTTP/1.1" else conn == "keep-alive"
    return parts[0], parts[1], body, keep


async def serve(reader, writer):
    try:
        while True:
            try:
                method, target, body, keep = await read_request(reader)
            except Bad as e:
                writer.write(response(e.status, close=True))
                break
            except asyncio.LimitOverrunError:
                writer.write(response(400, close=True))
                break
            out = route(method, target, body)
            if not keep:
                out = out.replace(b"\r\n", b"\r\nConnection: close\r\n", 1)
            writer.write(out)
            await writer.drain()
            if not keep:
                break
    except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), limit=8192 + 32768 + 4)
    print("listening on 127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
