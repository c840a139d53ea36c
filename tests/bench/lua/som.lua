-- Small support library mirroring the SOM core collection classes the SOM
-- benchmarks use, so both versions do comparable work:
--   Vector: growable array with append / at / size / isEmpty / removeFirst / each
--   Random: the classic 16-bit linear congruential generator used by several
--           benchmarks (seed := ((seed * 1309) + 13849) & 65535).

local som = {}

local Vector = {}
Vector.__index = Vector

function Vector.new(capacity)
  -- 'first' and 'last' follow the SOM Vector: elements live in [first, last).
  return setmetatable({ storage = {}, first = 1, last = 1 }, Vector)
end

function Vector:append(element)
  self.storage[self.last] = element
  self.last = self.last + 1
  return self
end

function Vector:at(index)
  local i = index + self.first - 1
  if i < self.first or i >= self.last then
    error("Vector index out of bounds: " .. tostring(index))
  end
  return self.storage[i]
end

function Vector:at_put(index, value)
  local i = index + self.first - 1
  if i < self.first or i >= self.last then
    error("Vector index out of bounds: " .. tostring(index))
  end
  self.storage[i] = value
end

function Vector:size()
  return self.last - self.first
end

function Vector:is_empty()
  return self.last == self.first
end

function Vector:remove_first()
  if self.last == self.first then error("Vector is empty") end
  local f = self.first
  local e = self.storage[f]
  self.storage[f] = nil
  self.first = f + 1
  return e
end

function Vector:each(fn)
  local s = self.storage
  for i = self.first, self.last - 1 do
    fn(s[i])
  end
end

som.Vector = Vector

local Random = {}
Random.__index = Random

function Random.new()
  return setmetatable({ seed = 74755 }, Random)
end

function Random:next()
  self.seed = ((self.seed * 1309) + 13849) & 65535
  return self.seed
end

som.Random = Random

return som
