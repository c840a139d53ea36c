-- SPDX-License-Identifier: BSD-2-Clause
-- The mix for make load: each connection cycles through /hello, a PUT and a GET of one
-- of 64 keys (load.sh stores them all first, so every GET finds one), GET /work?n=100
-- and a static file. Every answer is 2xx when the server is right.
local paths = {}
local n = 0
setup = function(thread) thread:set("id", n); n = n + 1 end
init = function(args)
  local k = 0
  request = function()
    k = k + 1
    local key = "/kv/k" .. ((id * 31 + k) % 64)
    local step = k % 5
    if step == 0 then return wrk.format("GET", "/hello") end
    if step == 1 then return wrk.format("PUT", key, nil, "value " .. k) end
    if step == 2 then return wrk.format("GET", key) end
    if step == 3 then return wrk.format("GET", "/work?n=100") end
    return wrk.format("GET", "/static/index.html")
  end
end
