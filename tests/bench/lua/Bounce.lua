-- Bounce: 100 balls with pseudo-random positions and speeds bounce in a box
-- for 50 steps; counts the bounces.  Exercises object field access, integer
-- arithmetic, abs and a deterministic random generator.
local Benchmark = require("benchmark")
local Random = require("som").Random

local Ball = {}
Ball.__index = Ball

function Ball.new(random)
  local b = setmetatable({}, Ball)
  b.x = random:next() % 500
  b.y = random:next() % 500
  b.x_vel = (random:next() % 300) - 150
  b.y_vel = (random:next() % 300) - 150
  return b
end

function Ball:bounce()
  local x_limit, y_limit = 500, 500
  local bounced = false
  self.x = self.x + self.x_vel
  self.y = self.y + self.y_vel
  if self.x > x_limit then
    self.x = x_limit; self.x_vel = 0 - math.abs(self.x_vel); bounced = true
  end
  if self.x < 0 then
    self.x = 0; self.x_vel = math.abs(self.x_vel); bounced = true
  end
  if self.y > y_limit then
    self.y = y_limit; self.y_vel = 0 - math.abs(self.y_vel); bounced = true
  end
  if self.y < 0 then
    self.y = 0; self.y_vel = math.abs(self.y_vel); bounced = true
  end
  return bounced
end

local Bounce = Benchmark.subclass()

function Bounce:benchmark()
  local random = Random.new()
  local ball_count = 100
  local bounces = 0
  local balls = {}
  for i = 1, ball_count do balls[i] = Ball.new(random) end
  for _ = 1, 50 do
    for i = 1, ball_count do
      if balls[i]:bounce() then bounces = bounces + 1 end
    end
  end
  return bounces
end

function Bounce:verify_result(result)
  return result == 1331
end

return Bounce
