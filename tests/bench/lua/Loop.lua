-- Loop: a tight nested integer loop (to:do: in SOM), exercising loop overhead
-- and small-integer arithmetic, with no allocation and no other sends.
local Benchmark = require("benchmark")

local Loop = Benchmark.subclass()

function Loop:benchmark()
  local sum = 0
  for j = 1, 100 do
    for i = 1, 1000 do
      sum = sum + ((i * j) % 7) - 3
    end
  end
  return sum
end

function Loop:verify_result(result)
  return result == -41742
end

return Loop
