-- NBody: the classic simulation of the Jovian planets (sun, Jupiter, Saturn,
-- Uranus, Neptune) with a simple symplectic integrator; 1000 steps of 0.01,
-- then the total energy.  Exercises floating-point arithmetic and field
-- access on a few objects.
local Benchmark = require("benchmark")

local PI = 3.141592653589793
local SOLAR_MASS = 4.0 * PI * PI
local DAYS_PER_YEAR = 365.24

local Body = {}
Body.__index = Body

function Body.new(x, y, z, vx, vy, vz, mass)
  local b = setmetatable({}, Body)
  b.x = x
  b.y = y
  b.z = z
  b.vx = vx * DAYS_PER_YEAR
  b.vy = vy * DAYS_PER_YEAR
  b.vz = vz * DAYS_PER_YEAR
  b.mass = mass * SOLAR_MASS
  return b
end

function Body:offset_momentum(px, py, pz)
  self.vx = (0.0 - px) / SOLAR_MASS
  self.vy = (0.0 - py) / SOLAR_MASS
  self.vz = (0.0 - pz) / SOLAR_MASS
end

local function jupiter()
  return Body.new(4.84143144246472090, -1.16032004402742839, -0.103622044471123109,
    0.00166007664274403694, 0.00769901118419740425, -0.0000690460016972063023,
    0.000954791938424326609)
end

local function saturn()
  return Body.new(8.34336671824457987, 4.12479856412430479, -0.403523417114321381,
    -0.00276742510726862411, 0.00499852801234917238, 0.0000230417297573763929,
    0.000285885980666130812)
end

local function uranus()
  return Body.new(12.8943695621391310, -15.1111514016986312, -0.223307578892655734,
    0.00296460137564761618, 0.00237847173959480950, -0.0000296589568540237556,
    0.0000436624404335156298)
end

local function neptune()
  return Body.new(15.3796971148509165, -25.9193146099879641, 0.179258772950371181,
    0.00268067772490389322, 0.00162824170038242295, -0.0000951592254519715870,
    0.0000515138902046611451)
end

local function sun()
  return Body.new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
end

local NBodySystem = {}
NBodySystem.__index = NBodySystem

function NBodySystem.new()
  local s = setmetatable({}, NBodySystem)
  local bodies = { sun(), jupiter(), saturn(), uranus(), neptune() }
  local px, py, pz = 0.0, 0.0, 0.0
  for i = 1, #bodies do
    local b = bodies[i]
    px = px + (b.vx * b.mass)
    py = py + (b.vy * b.mass)
    pz = pz + (b.vz * b.mass)
  end
  bodies[1]:offset_momentum(px, py, pz)
  s.bodies = bodies
  return s
end

function NBodySystem:advance(dt)
  local bodies = self.bodies
  local n = #bodies
  for i = 1, n do
    local bi = bodies[i]
    for j = i + 1, n do
      local bj = bodies[j]
      local dx = bi.x - bj.x
      local dy = bi.y - bj.y
      local dz = bi.z - bj.z
      local d_squared = (dx * dx) + (dy * dy) + (dz * dz)
      local distance = math.sqrt(d_squared)
      local mag = dt / (d_squared * distance)
      bi.vx = bi.vx - (dx * bj.mass * mag)
      bi.vy = bi.vy - (dy * bj.mass * mag)
      bi.vz = bi.vz - (dz * bj.mass * mag)
      bj.vx = bj.vx + (dx * bi.mass * mag)
      bj.vy = bj.vy + (dy * bi.mass * mag)
      bj.vz = bj.vz + (dz * bi.mass * mag)
    end
  end
  for i = 1, n do
    local b = bodies[i]
    b.x = b.x + (dt * b.vx)
    b.y = b.y + (dt * b.vy)
    b.z = b.z + (dt * b.vz)
  end
end

function NBodySystem:energy()
  local e = 0.0
  local bodies = self.bodies
  local n = #bodies
  for i = 1, n do
    local bi = bodies[i]
    e = e + (0.5 * bi.mass * ((bi.vx * bi.vx) + (bi.vy * bi.vy) + (bi.vz * bi.vz)))
    for j = i + 1, n do
      local bj = bodies[j]
      local dx = bi.x - bj.x
      local dy = bi.y - bj.y
      local dz = bi.z - bj.z
      local distance = math.sqrt((dx * dx) + (dy * dy) + (dz * dz))
      e = e - ((bi.mass * bj.mass) / distance)
    end
  end
  return e
end

local NBody = Benchmark.subclass()

function NBody:benchmark()
  local system = NBodySystem.new()
  for _ = 1, 1000 do
    system:advance(0.01)
  end
  return system:energy()
end

function NBody:verify_result(result)
  local expected = -0.169087605234606
  local diff = result - expected
  return diff < 0.000000000001 and diff > -0.000000000001
end

return NBody
