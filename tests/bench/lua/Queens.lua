-- Queens: solves the eight queens problem ten times by backtracking;
-- exercises boolean arrays, and:/or: style conditions and recursion.
local Benchmark = require("benchmark")

local Queens = Benchmark.subclass()

function Queens:benchmark()
  local result = true
  for _ = 1, 10 do
    result = result and self:queens()
  end
  return result
end

function Queens:verify_result(result)
  return result == true
end

function Queens:queens()
  self.free_rows = {}
  for i = 1, 8 do self.free_rows[i] = true end
  self.free_maxs = {}
  for i = 1, 16 do self.free_maxs[i] = true end
  self.free_mins = {}
  for i = 1, 16 do self.free_mins[i] = true end
  self.queen_rows = {}
  for i = 1, 8 do self.queen_rows[i] = -1 end
  return self:place_queen(1)
end

function Queens:place_queen(c)
  for r = 1, 8 do
    if self:is_free(r, c) then
      self.queen_rows[r] = c
      self:set(r, c, false)
      if c == 8 then return true end
      if self:place_queen(c + 1) then return true end
      self:set(r, c, true)
    end
  end
  return false
end

function Queens:is_free(r, c)
  return self.free_rows[r] and self.free_maxs[c + r] and self.free_mins[c - r + 8]
end

function Queens:set(r, c, v)
  self.free_rows[r] = v
  self.free_maxs[c + r] = v
  self.free_mins[c - r + 8] = v
end

return Queens
