-- Permute: generates all permutations of a 6-element array by recursive
-- swapping and counts the calls; exercises recursion and array access.
local Benchmark = require("benchmark")

local Permute = Benchmark.subclass()

function Permute:benchmark()
  self.count = 0
  self.v = {}
  for i = 1, 6 do self.v[i] = i end
  self:permute(6)
  return self.count
end

function Permute:verify_result(result)
  return result == 8660
end

function Permute:permute(n)
  self.count = self.count + 1
  if n ~= 0 then
    local n1 = n - 1
    self:permute(n1)
    for k = 0, n1 do
      local i = n1 - k
      self:swap(n1, i)
      self:permute(n1)
      self:swap(n1, i)
    end
  end
end

function Permute:swap(i, j)
  local v = self.v
  local tmp = v[i + 1]
  v[i + 1] = v[j + 1]
  v[j + 1] = tmp
end

return Permute
