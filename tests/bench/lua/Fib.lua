-- Fib: recursive Fibonacci; exercises method sends, integer arithmetic and
-- deep-ish recursion (fib(0) = fib(1) = 1).
local Benchmark = require("benchmark")

local Fib = Benchmark.subclass()

function Fib:fib(n)
  if n < 2 then return 1 end
  return self:fib(n - 1) + self:fib(n - 2)
end

function Fib:benchmark()
  return self:fib(24)
end

function Fib:verify_result(result)
  return result == 75025
end

return Fib
