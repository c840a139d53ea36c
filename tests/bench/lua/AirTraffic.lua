-- AirTraffic: a simplified aircraft collision-detection simulation in the
-- spirit of the CD benchmark (but not that algorithm).  Aircraft fly on
-- circles at four altitudes; every frame each aircraft's motion segment is
-- hashed into 2D voxels (a Dictionary of Vectors) and the motions sharing a
-- voxel are tested pairwise for a close approach during the frame.  The
-- result is the number of (frame, pair) collisions.  Exercises short-lived
-- immutable 3D vectors (allocation heavy), floating-point math, cos/sin,
-- Dictionary, Set and Vector.
local Benchmark = require("benchmark")
local Vector = require("som").Vector

local NUM_AIRCRAFT = 50
local NUM_FRAMES = 200
local RADIUS = 10.0
local VOXEL_SIZE = 50.0

-- Immutable 3D vector ---------------------------------------------------------
local Vec3 = {}
Vec3.__index = Vec3

function Vec3.new(x, y, z)
  return setmetatable({ x = x, y = y, z = z }, Vec3)
end

function Vec3:plus(o) return Vec3.new(self.x + o.x, self.y + o.y, self.z + o.z) end
function Vec3:minus(o) return Vec3.new(self.x - o.x, self.y - o.y, self.z - o.z) end
function Vec3:times(s) return Vec3.new(self.x * s, self.y * s, self.z * s) end
function Vec3:dot(o) return (self.x * o.x) + (self.y * o.y) + (self.z * o.z) end

-- One aircraft's move during a frame --------------------------------------------
local Motion = {}
Motion.__index = Motion

function Motion.new(callsign, from, to)
  return setmetatable({ callsign = callsign, from = from, to = to }, Motion)
end

-- True when the two aircraft, moving linearly during the frame, come closer
-- than radius to each other.
function Motion:collides_with(other, radius)
  local d0 = self.from:minus(other.from)
  local dv = self.to:minus(self.from):minus(other.to:minus(other.from))
  local dvdv = dv:dot(dv)
  local t = 0.0
  if dvdv > 0.000001 then
    t = (0.0 - d0:dot(dv)) / dvdv
    if t < 0.0 then t = 0.0 end
    if t > 1.0 then t = 1.0 end
  end
  local closest = d0:plus(dv:times(t))
  return closest:dot(closest) <= (radius * radius)
end

-- An aircraft on a circular path -----------------------------------------------------
local Aircraft = {}
Aircraft.__index = Aircraft

function Aircraft.new(i)
  local a = setmetatable({}, Aircraft)
  a.cx = 500.0 + (250.0 * math.cos(i * 0.9))
  a.cy = 500.0 + (250.0 * math.sin(i * 1.3))
  a.r = 100.0 + ((i * 37) % 100)
  local w = 0.02 + ((i % 5) * 0.007)
  if i % 2 == 1 then w = 0.0 - w end
  a.w = w
  a.phase = i * 0.7
  a.z = (i % 4) * 20.0
  return a
end

function Aircraft:position(frame)
  local angle = (self.w * frame) + self.phase
  return Vec3.new(self.cx + (self.r * math.cos(angle)),
                  self.cy + (self.r * math.sin(angle)),
                  self.z)
end

-- The simulation --------------------------------------------------------------------
local AirTraffic = Benchmark.subclass()

function AirTraffic:benchmark()
  local aircraft = {}
  local positions = {}
  for i = 1, NUM_AIRCRAFT do
    aircraft[i] = Aircraft.new(i - 1)
    positions[i] = aircraft[i]:position(0)
  end
  local collisions = 0
  for frame = 1, NUM_FRAMES do
    local motions = Vector.new()
    for i = 1, NUM_AIRCRAFT do
      local new_position = aircraft[i]:position(frame)
      motions:append(Motion.new(i, positions[i], new_position))
      positions[i] = new_position
    end
    collisions = collisions + self:detect_collisions(motions)
  end
  return collisions
end

function AirTraffic:verify_result(result)
  return result == 71
end

function AirTraffic:min(a, b)
  if a < b then return a end
  return b
end

function AirTraffic:max(a, b)
  if a > b then return a end
  return b
end

function AirTraffic:draw_motion(motion, voxels, keys)
  local from, to = motion.from, motion.to
  local x0 = math.floor((self:min(from.x, to.x) - RADIUS) / VOXEL_SIZE)
  local x1 = math.floor((self:max(from.x, to.x) + RADIUS) / VOXEL_SIZE)
  local y0 = math.floor((self:min(from.y, to.y) - RADIUS) / VOXEL_SIZE)
  local y1 = math.floor((self:max(from.y, to.y) + RADIUS) / VOXEL_SIZE)
  for vx = x0, x1 do
    for vy = y0, y1 do
      local key = (vx * 1000) + vy
      local list = voxels[key]
      if not list then
        list = Vector.new()
        voxels[key] = list
        keys:append(key)
      end
      list:append(motion)
    end
  end
end

-- Answers the number of distinct colliding pairs among motions.
function AirTraffic:detect_collisions(motions)
  local voxels = {}
  local keys = Vector.new()
  motions:each(function(m) self:draw_motion(m, voxels, keys) end)
  local seen = {}
  local count = 0
  keys:each(function(key)
    local list = voxels[key]
    local size = list:size()
    if size > 1 then
      for i = 1, size - 1 do
        local a = list:at(i)
        for j = i + 1, size do
          local b = list:at(j)
          local pair = (self:min(a.callsign, b.callsign) * 1000) + self:max(a.callsign, b.callsign)
          if not seen[pair] and a:collides_with(b, RADIUS) then
            seen[pair] = true
            count = count + 1
          end
        end
      end
    end
  end)
  return count
end

return AirTraffic
