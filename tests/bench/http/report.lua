-- SPDX-License-Identifier: BSD-2-Clause
-- wrk's summary as one line for tests/bench/http/load.sh: requests, requests/s, the
-- latency percentiles in microseconds, and every kind of failure wrk counts.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d rps=%.0f p50=%d p90=%d p99=%d p999=%d max=%d non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
