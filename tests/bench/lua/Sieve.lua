-- Sieve: sieve of Eratosthenes over an array of 5000 booleans; exercises array
-- access and simple loops.
local Benchmark = require("benchmark")

local Sieve = Benchmark.subclass()

function Sieve:benchmark()
  local flags = {}
  for i = 1, 5000 do flags[i] = true end
  return self:sieve(flags, 5000)
end

function Sieve:sieve(flags, size)
  local prime_count = 0
  for i = 2, size do
    if flags[i - 1] then
      prime_count = prime_count + 1
      local k = i + i
      while k <= size do
        flags[k - 1] = false
        k = k + i
      end
    end
  end
  return prime_count
end

function Sieve:verify_result(result)
  return result == 669
end

return Sieve
