-- Storage: builds a tree of arrays, depth 7 with fan-out 4 and leaves of
-- pseudo-random size; exercises array allocation and the garbage collector.
local Benchmark = require("benchmark")
local Random = require("som").Random

local Storage = Benchmark.subclass()

-- An array of n slots, all set (to false, Lua's stand-in for SOM's nil
-- slots), so that the memory allocated resembles SOM's Array new: n.
local function new_array(n)
  local a = {}
  for i = 1, n do a[i] = false end
  return a
end

function Storage:benchmark()
  local random = Random.new()
  self.count = 0
  self:build_tree_depth(7, random)
  return self.count
end

function Storage:verify_result(result)
  return result == 5461
end

function Storage:build_tree_depth(depth, random)
  self.count = self.count + 1
  if depth == 1 then
    return new_array((random:next() % 10) + 1)
  end
  local arr = new_array(4)
  for i = 1, 4 do
    arr[i] = self:build_tree_depth(depth - 1, random)
  end
  return arr
end

return Storage
