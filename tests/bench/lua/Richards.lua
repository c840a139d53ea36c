-- Richards: Martin Richards' simulation of an operating-system task
-- scheduler (an idle task, a worker, two handlers and two devices exchanging
-- packets).  Exercises polymorphic sends, closures, object fields and linked
-- lists.  The result combines the packet-queueing and hold counts.
local Benchmark = require("benchmark")

local IDLER, WORKER, HANDLER_A, HANDLER_B, DEVICE_A, DEVICE_B = 1, 2, 3, 4, 5, 6
local DEVICE_PACKET_KIND, WORK_PACKET_KIND = 0, 1
local DATA_SIZE = 4

-- Packet ------------------------------------------------------------------
local Packet = {}
Packet.__index = Packet

function Packet.new(link, identity, kind)
  local p = setmetatable({}, Packet)
  p.link = link
  p.identity = identity
  p.kind = kind
  p.datum = 1
  p.data = {}
  for i = 1, DATA_SIZE do p.data[i] = 0 end
  return p
end

-- Task state and task control block ---------------------------------------
local TaskControlBlock = {}
TaskControlBlock.__index = TaskControlBlock

function TaskControlBlock.new(link, identity, priority, input, fn, handle)
  local t = setmetatable({}, TaskControlBlock)
  t.link = link
  t.identity = identity
  t.priority = priority
  t.input = input
  t.fn = fn
  t.handle = handle
  t.packet_pending = false
  t.task_waiting = false
  t.task_holding = false
  return t
end

-- state setters (the TaskState protocol)
function TaskControlBlock:set_running()
  self.packet_pending = false; self.task_waiting = false; self.task_holding = false
end

function TaskControlBlock:set_packet_pending()
  self.packet_pending = true; self.task_waiting = false; self.task_holding = false
end

function TaskControlBlock:set_waiting()
  self.packet_pending = false; self.task_waiting = true; self.task_holding = false
end

function TaskControlBlock:set_waiting_with_packet()
  self.packet_pending = true; self.task_waiting = true; self.task_holding = false
end

function TaskControlBlock:is_task_holding_or_waiting()
  return self.task_holding or ((not self.packet_pending) and self.task_waiting)
end

function TaskControlBlock:is_waiting_with_packet()
  return self.packet_pending and self.task_waiting and not self.task_holding
end

function TaskControlBlock:add_input_and_check_priority(packet, old_task, scheduler)
  if not self.input then
    self.input = packet
    self.packet_pending = true
    if self.priority > old_task.priority then return self end
  else
    self.input = scheduler:append_to(packet, self.input)
  end
  return old_task
end

function TaskControlBlock:run_task()
  local message
  if self:is_waiting_with_packet() then
    message = self.input
    self.input = message.link
    if not self.input then
      self:set_running()
    else
      self:set_packet_pending()
    end
  else
    message = false
  end
  return self.fn(message, self.handle)
end

-- Task data records --------------------------------------------------------
local DeviceTaskDataRecord = {}
DeviceTaskDataRecord.__index = DeviceTaskDataRecord
function DeviceTaskDataRecord.new()
  return setmetatable({ pending = false }, DeviceTaskDataRecord)
end

local HandlerTaskDataRecord = {}
HandlerTaskDataRecord.__index = HandlerTaskDataRecord
function HandlerTaskDataRecord.new()
  return setmetatable({ work_in = false, device_in = false }, HandlerTaskDataRecord)
end

local IdleTaskDataRecord = {}
IdleTaskDataRecord.__index = IdleTaskDataRecord
function IdleTaskDataRecord.new()
  return setmetatable({ control = 1, count = 10000 }, IdleTaskDataRecord)
end

local WorkerTaskDataRecord = {}
WorkerTaskDataRecord.__index = WorkerTaskDataRecord
function WorkerTaskDataRecord.new()
  return setmetatable({ destination = HANDLER_A, count = 0 }, WorkerTaskDataRecord)
end

-- The scheduler, which is the benchmark --------------------------------------
local Richards = Benchmark.subclass()

function Richards:benchmark()
  self:reset()
  self:create_idler(IDLER, 0, false, "running")
  local wkq = self:create_packet(false, WORKER, WORK_PACKET_KIND)
  wkq = self:create_packet(wkq, WORKER, WORK_PACKET_KIND)
  self:create_worker(WORKER, 1000, wkq, "waitingWithPacket")

  wkq = self:create_packet(false, DEVICE_A, DEVICE_PACKET_KIND)
  wkq = self:create_packet(wkq, DEVICE_A, DEVICE_PACKET_KIND)
  wkq = self:create_packet(wkq, DEVICE_A, DEVICE_PACKET_KIND)
  self:create_handler(HANDLER_A, 2000, wkq, "waitingWithPacket")

  wkq = self:create_packet(false, DEVICE_B, DEVICE_PACKET_KIND)
  wkq = self:create_packet(wkq, DEVICE_B, DEVICE_PACKET_KIND)
  wkq = self:create_packet(wkq, DEVICE_B, DEVICE_PACKET_KIND)
  self:create_handler(HANDLER_B, 3000, wkq, "waitingWithPacket")

  self:create_device(DEVICE_A, 4000, false, "waiting")
  self:create_device(DEVICE_B, 5000, false, "waiting")

  self:schedule()
  return self.queue_packet_count * 100000 + self.hold_count
end

function Richards:verify_result(result)
  -- queuePacketCount = 23246, holdCount = 9297
  return result == 2324609297
end

function Richards:reset()
  self.task_list = false
  self.current_task = false
  self.current_task_identity = 0
  self.task_table = {}
  for i = 1, 6 do self.task_table[i] = false end
  self.queue_packet_count = 0
  self.hold_count = 0
end

function Richards:append_to(packet, queue_head)
  packet.link = false
  if not queue_head then return packet end
  local mouse = queue_head
  local link = mouse.link
  while link do
    mouse = link
    link = mouse.link
  end
  mouse.link = packet
  return queue_head
end

function Richards:create_packet(link, identity, kind)
  return Packet.new(link, identity, kind)
end

function Richards:create_task(identity, priority, work, state, fn, data)
  local t = TaskControlBlock.new(self.task_list, identity, priority, work, fn, data)
  if state == "running" then t:set_running()
  elseif state == "waiting" then t:set_waiting()
  elseif state == "waitingWithPacket" then t:set_waiting_with_packet()
  else t:set_packet_pending() end
  self.task_list = t
  self.task_table[identity] = t
end

function Richards:create_device(identity, priority, work, state)
  local data = DeviceTaskDataRecord.new()
  self:create_task(identity, priority, work, state,
    function(packet, d)
      if not packet then
        local pending = d.pending
        if not pending then
          return self:wait()
        end
        d.pending = false
        return self:queue_packet(pending)
      end
      d.pending = packet
      return self:hold_self()
    end, data)
end

function Richards:create_handler(identity, priority, work, state)
  local data = HandlerTaskDataRecord.new()
  self:create_task(identity, priority, work, state,
    function(packet, d)
      if packet then
        if packet.kind == WORK_PACKET_KIND then
          d.work_in = self:append_to(packet, d.work_in)
        else
          d.device_in = self:append_to(packet, d.device_in)
        end
      end
      local work_packet = d.work_in
      if work_packet then
        local count = work_packet.datum
        if count > DATA_SIZE then
          d.work_in = work_packet.link
          return self:queue_packet(work_packet)
        end
        local device_packet = d.device_in
        if device_packet then
          d.device_in = device_packet.link
          device_packet.datum = work_packet.data[count]
          work_packet.datum = count + 1
          return self:queue_packet(device_packet)
        end
      end
      return self:wait()
    end, data)
end

function Richards:create_idler(identity, priority, work, state)
  local data = IdleTaskDataRecord.new()
  self:create_task(identity, priority, work, state,
    function(packet, d)
      d.count = d.count - 1
      if d.count == 0 then
        return self:hold_self()
      end
      if (d.control & 1) == 0 then
        d.control = d.control // 2
        return self:release(DEVICE_A)
      end
      d.control = (d.control // 2) ~ 53256
      return self:release(DEVICE_B)
    end, data)
end

function Richards:create_worker(identity, priority, work, state)
  local data = WorkerTaskDataRecord.new()
  self:create_task(identity, priority, work, state,
    function(packet, d)
      if not packet then
        return self:wait()
      end
      if d.destination == HANDLER_A then
        d.destination = HANDLER_B
      else
        d.destination = HANDLER_A
      end
      packet.identity = d.destination
      packet.datum = 1
      for i = 1, DATA_SIZE do
        d.count = d.count + 1
        if d.count > 26 then d.count = 1 end
        packet.data[i] = d.count
      end
      return self:queue_packet(packet)
    end, data)
end

function Richards:find_task(identity)
  local t = self.task_table[identity]
  if not t then error("findTask failed") end
  return t
end

function Richards:hold_self()
  self.hold_count = self.hold_count + 1
  self.current_task.task_holding = true
  return self.current_task.link
end

function Richards:queue_packet(packet)
  local t = self:find_task(packet.identity)
  self.queue_packet_count = self.queue_packet_count + 1
  packet.link = false
  packet.identity = self.current_task_identity
  return t:add_input_and_check_priority(packet, self.current_task, self)
end

function Richards:release(identity)
  local t = self:find_task(identity)
  t.task_holding = false
  if t.priority > self.current_task.priority then
    return t
  end
  return self.current_task
end

function Richards:wait()
  self.current_task.task_waiting = true
  return self.current_task
end

function Richards:schedule()
  self.current_task = self.task_list
  while self.current_task do
    if self.current_task:is_task_holding_or_waiting() then
      self.current_task = self.current_task.link
    else
      self.current_task_identity = self.current_task.identity
      self.current_task = self.current_task:run_task()
    end
  end
end

return Richards
