-- DeltaBlue: the incremental one-way constraint solver of Freeman-Benson and
-- Maloney, running a chain test and a projection test of 100 variables each.
-- Exercises polymorphism over a class hierarchy of constraints, growable
-- collections (Vector) and many small objects.
local Benchmark = require("benchmark")
local Vector = require("som").Vector

-- Strength ------------------------------------------------------------------
local Strength = {}
Strength.__index = Strength

local function new_strength(value, name)
  return setmetatable({ value = value, name = name }, Strength)
end

local REQUIRED = new_strength(0, "required")
local STRONG_PREFERRED = new_strength(1, "strongPreferred")
local PREFERRED = new_strength(2, "preferred")
local STRONG_DEFAULT = new_strength(3, "strongDefault")
local NORMAL = new_strength(4, "normal")
local WEAK_DEFAULT = new_strength(5, "weakDefault")
local ABSOLUTE_WEAKEST = new_strength(6, "absoluteWeakest")
local BY_VALUE = { [0] = REQUIRED, STRONG_PREFERRED, PREFERRED, STRONG_DEFAULT,
                   NORMAL, WEAK_DEFAULT, ABSOLUTE_WEAKEST }

function Strength:stronger(s) return self.value < s.value end
function Strength:weaker(s) return self.value > s.value end
function Strength:weakest_of(s)
  if self:weaker(s) then return self end
  return s
end
function Strength:next_weaker()
  return BY_VALUE[self.value + 1]
end

-- Variable ------------------------------------------------------------------
local Variable = {}
Variable.__index = Variable

function Variable.new(value)
  return setmetatable({
    value = value,
    constraints = Vector.new(),
    determined_by = false,
    walk_strength = ABSOLUTE_WEAKEST,
    stay = true,
    mark = 0,
  }, Variable)
end

function Variable:add_constraint(c)
  self.constraints:append(c)
end

function Variable:remove_constraint(c)
  local new_list = Vector.new()
  self.constraints:each(function(each)
    if each ~= c then new_list:append(each) end
  end)
  self.constraints = new_list
  if self.determined_by == c then self.determined_by = false end
end

-- Constraint (abstract) -----------------------------------------------------
local Constraint = {}
Constraint.__index = Constraint

function Constraint:add_constraint()
  self:add_to_graph()
  self.planner:incremental_add(self)
end

function Constraint:satisfy(mark)
  self:choose_method(mark)
  if not self:is_satisfied() then
    if self.strength == REQUIRED then
      error("Could not satisfy a required constraint")
    end
    return false
  end
  self:mark_inputs(mark)
  local out = self:output()
  local overridden = out.determined_by
  if overridden then overridden:mark_unsatisfied() end
  out.determined_by = self
  if not self.planner:add_propagate(self, mark) then
    error("Cycle encountered")
  end
  out.mark = mark
  return overridden
end

function Constraint:destroy_constraint()
  if self:is_satisfied() then
    self.planner:incremental_remove(self)
  end
  self:remove_from_graph()
end

function Constraint:is_input() return false end

-- UnaryConstraint -------------------------------------------------------------
local UnaryConstraint = setmetatable({}, { __index = Constraint })
UnaryConstraint.__index = UnaryConstraint

function UnaryConstraint:init(v, strength, planner)
  self.strength = strength
  self.planner = planner
  self.my_output = v
  self.satisfied = false
  self:add_constraint()
  return self
end

function UnaryConstraint:add_to_graph()
  self.my_output:add_constraint(self)
  self.satisfied = false
end

function UnaryConstraint:choose_method(mark)
  self.satisfied = (self.my_output.mark ~= mark)
    and self.strength:stronger(self.my_output.walk_strength)
end

function UnaryConstraint:is_satisfied() return self.satisfied end
function UnaryConstraint:mark_inputs(mark) end
function UnaryConstraint:output() return self.my_output end

function UnaryConstraint:recalculate()
  self.my_output.walk_strength = self.strength
  self.my_output.stay = not self:is_input()
  if self.my_output.stay then self:execute() end
end

function UnaryConstraint:mark_unsatisfied() self.satisfied = false end
function UnaryConstraint:inputs_known(mark) return true end

function UnaryConstraint:remove_from_graph()
  if self.my_output then self.my_output:remove_constraint(self) end
  self.satisfied = false
end

local StayConstraint = setmetatable({}, { __index = UnaryConstraint })
StayConstraint.__index = StayConstraint
function StayConstraint.new(v, strength, planner)
  return setmetatable({}, StayConstraint):init(v, strength, planner)
end
function StayConstraint:execute() end

local EditConstraint = setmetatable({}, { __index = UnaryConstraint })
EditConstraint.__index = EditConstraint
function EditConstraint.new(v, strength, planner)
  return setmetatable({}, EditConstraint):init(v, strength, planner)
end
function EditConstraint:is_input() return true end
function EditConstraint:execute() end

-- BinaryConstraint ------------------------------------------------------------
local FORWARD, BACKWARD = "forward", "backward"

local BinaryConstraint = setmetatable({}, { __index = Constraint })
BinaryConstraint.__index = BinaryConstraint

function BinaryConstraint:init(var1, var2, strength, planner)
  self.strength = strength
  self.planner = planner
  self.v1 = var1
  self.v2 = var2
  self.direction = false
  self:add_constraint()
  return self
end

function BinaryConstraint:choose_method(mark)
  if self.v1.mark == mark then
    if self.v2.mark ~= mark and self.strength:stronger(self.v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = false
    end
    return
  end
  if self.v2.mark == mark then
    if self.v1.mark ~= mark and self.strength:stronger(self.v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = false
    end
    return
  end
  if self.v1.walk_strength:weaker(self.v2.walk_strength) then
    if self.strength:stronger(self.v1.walk_strength) then
      self.direction = BACKWARD
    else
      self.direction = false
    end
  else
    if self.strength:stronger(self.v2.walk_strength) then
      self.direction = FORWARD
    else
      self.direction = false
    end
  end
end

function BinaryConstraint:add_to_graph()
  self.v1:add_constraint(self)
  self.v2:add_constraint(self)
  self.direction = false
end

function BinaryConstraint:is_satisfied() return self.direction ~= false end

function BinaryConstraint:mark_inputs(mark)
  self:input().mark = mark
end

function BinaryConstraint:input()
  if self.direction == FORWARD then return self.v1 end
  return self.v2
end

function BinaryConstraint:output()
  if self.direction == FORWARD then return self.v2 end
  return self.v1
end

function BinaryConstraint:recalculate()
  local ihn = self:input()
  local out = self:output()
  out.walk_strength = self.strength:weakest_of(ihn.walk_strength)
  out.stay = ihn.stay
  if out.stay then self:execute() end
end

function BinaryConstraint:mark_unsatisfied() self.direction = false end

function BinaryConstraint:inputs_known(mark)
  local i = self:input()
  return i.mark == mark or i.stay or not i.determined_by
end

function BinaryConstraint:remove_from_graph()
  if self.v1 then self.v1:remove_constraint(self) end
  if self.v2 then self.v2:remove_constraint(self) end
  self.direction = false
end

local EqualityConstraint = setmetatable({}, { __index = BinaryConstraint })
EqualityConstraint.__index = EqualityConstraint
function EqualityConstraint.new(var1, var2, strength, planner)
  return setmetatable({}, EqualityConstraint):init(var1, var2, strength, planner)
end
function EqualityConstraint:execute()
  self:output().value = self:input().value
end

local ScaleConstraint = setmetatable({}, { __index = BinaryConstraint })
ScaleConstraint.__index = ScaleConstraint
function ScaleConstraint.new(src, scale, offset, dest, strength, planner)
  local c = setmetatable({}, ScaleConstraint)
  c.scale = scale
  c.offset = offset
  return c:init(src, dest, strength, planner)
end

function ScaleConstraint:add_to_graph()
  BinaryConstraint.add_to_graph(self)
  self.scale:add_constraint(self)
  self.offset:add_constraint(self)
end

function ScaleConstraint:remove_from_graph()
  BinaryConstraint.remove_from_graph(self)
  if self.scale then self.scale:remove_constraint(self) end
  if self.offset then self.offset:remove_constraint(self) end
end

function ScaleConstraint:mark_inputs(mark)
  BinaryConstraint.mark_inputs(self, mark)
  self.scale.mark = mark
  self.offset.mark = mark
end

function ScaleConstraint:execute()
  if self.direction == FORWARD then
    self.v2.value = self.v1.value * self.scale.value + self.offset.value
  else
    self.v1.value = (self.v2.value - self.offset.value) // self.scale.value
  end
end

function ScaleConstraint:recalculate()
  local ihn = self:input()
  local out = self:output()
  out.walk_strength = self.strength:weakest_of(ihn.walk_strength)
  out.stay = ihn.stay and self.scale.stay and self.offset.stay
  if out.stay then self:execute() end
end

-- Plan ------------------------------------------------------------------------
local Plan = {}
Plan.__index = Plan
function Plan.new() return setmetatable({ constraints = Vector.new() }, Plan) end
function Plan:add_constraint(c) self.constraints:append(c) end
function Plan:execute()
  self.constraints:each(function(c) c:execute() end)
end

-- Planner -----------------------------------------------------------------------
local Planner = {}
Planner.__index = Planner
function Planner.new() return setmetatable({ current_mark = 0 }, Planner) end

function Planner:incremental_add(c)
  local mark = self:new_mark()
  local overridden = c:satisfy(mark)
  while overridden do
    overridden = overridden:satisfy(mark)
  end
end

function Planner:incremental_remove(c)
  local out = c:output()
  c:mark_unsatisfied()
  c:remove_from_graph()
  local unsatisfied = self:remove_propagate_from(out)
  local strength = REQUIRED
  while strength ~= ABSOLUTE_WEAKEST do
    unsatisfied:each(function(u)
      if u.strength == strength then self:incremental_add(u) end
    end)
    strength = strength:next_weaker()
  end
end

function Planner:new_mark()
  self.current_mark = self.current_mark + 1
  return self.current_mark
end

function Planner:make_plan(sources)
  local mark = self:new_mark()
  local plan = Plan.new()
  local todo = sources
  while not todo:is_empty() do
    local c = todo:remove_first()
    if c:output().mark ~= mark and c:inputs_known(mark) then
      plan:add_constraint(c)
      c:output().mark = mark
      self:add_constraints_consuming_to(c:output(), todo)
    end
  end
  return plan
end

function Planner:extract_plan_from_constraints(constraints)
  local sources = Vector.new()
  constraints:each(function(c)
    if c:is_input() and c:is_satisfied() then sources:append(c) end
  end)
  return self:make_plan(sources)
end

function Planner:add_propagate(c, mark)
  local todo = Vector.new()
  todo:append(c)
  while not todo:is_empty() do
    local d = todo:remove_first()
    if d:output().mark == mark then
      self:incremental_remove(c)
      return false
    end
    d:recalculate()
    self:add_constraints_consuming_to(d:output(), todo)
  end
  return true
end

function Planner:remove_propagate_from(out)
  out.determined_by = false
  out.walk_strength = ABSOLUTE_WEAKEST
  out.stay = true
  local unsatisfied = Vector.new()
  local todo = Vector.new()
  todo:append(out)
  while not todo:is_empty() do
    local v = todo:remove_first()
    v.constraints:each(function(c)
      if not c:is_satisfied() then unsatisfied:append(c) end
    end)
    local determining = v.determined_by
    v.constraints:each(function(next)
      if next ~= determining and next:is_satisfied() then
        next:recalculate()
        todo:append(next:output())
      end
    end)
  end
  return unsatisfied
end

function Planner:add_constraints_consuming_to(v, coll)
  local determining = v.determined_by
  v.constraints:each(function(c)
    if c ~= determining and c:is_satisfied() then coll:append(c) end
  end)
end

-- Answers the sum of the edited variable's values seen at the other end of
-- the chain (0 + 1 + ... + 99 when the solver works).
function Planner.chain_test(n)
  local planner = Planner.new()
  local vars = {}
  for i = 1, n + 1 do vars[i] = Variable.new(0) end
  for i = 1, n do
    EqualityConstraint.new(vars[i], vars[i + 1], REQUIRED, planner)
  end
  local first, last = vars[1], vars[n + 1]
  StayConstraint.new(last, STRONG_DEFAULT, planner)
  local edit = EditConstraint.new(first, PREFERRED, planner)
  local edits = Vector.new()
  edits:append(edit)
  local plan = planner:extract_plan_from_constraints(edits)
  local sum = 0
  for i = 0, 99 do
    first.value = i
    plan:execute()
    sum = sum + last.value
  end
  return sum
end

function Planner:change(var, new_value)
  local edit = EditConstraint.new(var, PREFERRED, self)
  local edits = Vector.new()
  edits:append(edit)
  local plan = self:extract_plan_from_constraints(edits)
  for _ = 1, 10 do
    var.value = new_value
    plan:execute()
  end
  edit:destroy_constraint()
end

-- Answers a checksum of the values computed by four changes.
function Planner.projection_test(n)
  local planner = Planner.new()
  local scale = Variable.new(10)
  local offset = Variable.new(1000)
  local src, dst
  local dests = Vector.new()
  for i = 0, n - 1 do
    src = Variable.new(i)
    dst = Variable.new(i)
    dests:append(dst)
    StayConstraint.new(src, NORMAL, planner)
    ScaleConstraint.new(src, scale, offset, dst, REQUIRED, planner)
  end
  local sum = 0
  planner:change(src, 17)
  sum = sum + dst.value            -- 1170
  planner:change(dst, 1050)
  sum = sum + src.value            -- 5
  planner:change(scale, 5)
  dests:each(function(d) sum = sum + d.value end)
  planner:change(offset, 2000)
  dests:each(function(d) sum = sum + d.value end)
  return sum
end

local DeltaBlue = Benchmark.subclass()

function DeltaBlue:benchmark()
  return Planner.chain_test(100) * 1000000 + Planner.projection_test(100)
end

function DeltaBlue:verify_result(result)
  return result == 4950349735
end

return DeltaBlue
