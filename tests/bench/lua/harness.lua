-- Benchmark driver for the Lua versions of the sqvm benchmarks.
--   lua5.4 harness.lua Name OUTER INNER
-- Loads Name.lua from this directory, runs OUTER times the inner benchmark
-- loop of INNER iterations (each result verified), and prints one line:
--   Name: iterations=OUTER runtime: 12345us
-- Time is process CPU time (os.clock), which for this single-threaded
-- program is the same as wall time minus scheduling noise.

local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path

local name = arg[1]
if not name then
  io.stderr:write("usage: lua5.4 harness.lua Name [outer [inner]]\n")
  os.exit(1)
end
local outer = tonumber(arg[2] or "1")
local inner = tonumber(arg[3] or "1")

local ok, cls = pcall(require, name)
if not ok then
  io.stderr:write("cannot load benchmark " .. name .. ": " .. tostring(cls) .. "\n")
  os.exit(1)
end
local bench = cls.new()

local start = os.clock()
for _ = 1, outer do
  if not bench:inner_benchmark_loop(inner) then
    io.stderr:write("ERROR: " .. name .. " answered a wrong result\n")
    os.exit(1)
  end
end
local elapsed = math.floor((os.clock() - start) * 1000000 + 0.5)
print(string.format("%s: iterations=%d runtime: %dus", name, outer, elapsed))
os.exit(0)
