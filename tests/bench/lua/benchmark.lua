-- Shared base "class" for the Lua benchmarks: mirrors tests/bench/Benchmark.som.
-- A benchmark is a table whose metatable chain ends in Benchmark; it defines
-- benchmark() (one inner iteration, answers a result) and verify_result(r).

local Benchmark = {}
Benchmark.__index = Benchmark

function Benchmark:inner_benchmark_loop(n)
  for _ = 1, n do
    if not self:verify_result(self:benchmark()) then
      return false
    end
  end
  return true
end

-- Create a subclass of Benchmark (or of another class) with a new() constructor.
function Benchmark.subclass(super)
  super = super or Benchmark
  local cls = setmetatable({}, { __index = super })
  cls.__index = cls
  function cls.new()
    return setmetatable({}, cls)
  end
  return cls
end

return Benchmark
