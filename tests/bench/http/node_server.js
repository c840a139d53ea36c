// SPDX-License-Identifier: BSD-2-Clause
// The service of examples/http in idiomatic Node.js (the http module, no packages), the
// anchor for make load: keep-alive, Content-Length bodies, the same limits (header
// fields 32 KiB through maxHeaderSize, body 1 MiB), the same routes and answers.
//
//     node node_server.js PORT [STATIC_DIR]     prints "listening on 127.0.0.1:PORT"
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');

const STATIC = process.argv[3] || 'examples/http/static';
const TYPES = { '.html': 'text/html; charset=utf-8', '.txt': 'text/plain; charset=utf-8', '.css': 'text/css',
                '.js': 'text/javascript', '.json': 'application/json' };
const store = new Map();

function send(res, status, body, type) {
  if (status === 204) { res.writeHead(204); res.end(); return; }
  if (body === undefined) body = http.STATUS_CODES[status] + '\n';
  res.writeHead(status, { 'Content-Type': type || 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function work(res, query) {
  const n = new URLSearchParams(query).get('n') || '';
  if (!/^[0-9]+$/.test(n) || +n < 1 || +n > 100000) return send(res, 400, 'n must be an integer from 1 to 100000\n');
  let seed = 42;
  const items = [];
  for (let i = 1; i <= +n; i++) {
    seed = Number((BigInt(seed) * 1103515245n + 12345n) % 2147483648n);
    items.push({ id: i, name: 'item-' + i, score: seed % 1000 });
  }
  items.sort((a, b) => a.score - b.score || a.id - b.id);
  send(res, 200, JSON.stringify({ n: +n, items }), 'application/json');
}

function serveStatic(res, name) {
  if (!name || name === '.' || name.includes('..') || name.includes('/') || name.includes('\0')) return send(res, 404);
  fs.readFile(path.join(STATIC, name), (err, data) => {
    if (err) return send(res, 404);
    send(res, 200, data, TYPES[path.extname(name)] || 'application/octet-stream');
  });
}

function kv(req, res, key, body) {
  if (!key || key.includes('/')) return send(res, 404);
  if (req.method === 'PUT') { const fresh = !store.has(key); store.set(key, body); return send(res, fresh ? 201 : 204); }
  if (!store.has(key)) return send(res, 404);
  if (req.method === 'GET') return send(res, 200, store.get(key), 'application/octet-stream');
  store.delete(key);
  send(res, 204);
}

const server = http.createServer({ maxHeaderSize: 32768 }, (req, res) => {
  const [p, query = ''] = req.url.split('?', 2);
  const chunks = [];
  let size = 0;
  if (+(req.headers['content-length'] || 0) > 1048576) { res.shouldKeepAlive = false; return send(res, 413); }
  req.on('data', (c) => { size += c.length; chunks.push(c); });
  req.on('end', () => {
    const segment = '/' + p.slice(1).split('/', 1)[0];
    if (segment === '/kv' && ['PUT', 'GET', 'DELETE'].includes(req.method)) return kv(req, res, p.slice(4), Buffer.concat(chunks, size));
    if (req.method === 'GET') {
      if (p === '/hello') return send(res, 200, 'Hello, world');
      if (p === '/work') return work(res, query);
      if (segment === '/static') return serveStatic(res, p.slice(8));
    }
    send(res, 404);
  });
});
server.keepAliveTimeout = 10000;
server.listen(+process.argv[2], '127.0.0.1', () => {
  console.log('listening on 127.0.0.1:' + server.address().port);
});
