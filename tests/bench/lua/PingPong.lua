-- PingPong: two coroutines hand control back and forth, 10,000 round trips
-- (20,000 switches) per iteration; the Lua equivalent of two green processes
-- and two semaphores. Answers the number of round trips.
local Benchmark = require("benchmark")

local PingPong = Benchmark.subclass()

function PingPong:benchmark()
  local count = 0
  local ponger = coroutine.wrap(function()
    while true do
      count = count + 1
      coroutine.yield()
    end
  end)
  for _ = 1, 10000 do ponger() end
  return count
end

function PingPong:verify_result(result)
  return result == 10000
end

return PingPong
