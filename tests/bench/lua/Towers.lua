-- Towers: Towers of Hanoi with 13 disks, the disks of each pile kept as a
-- linked list of disk objects; exercises recursion, object field access and
-- small-object allocation.
local Benchmark = require("benchmark")

local Disk = {}
Disk.__index = Disk

function Disk.new(size)
  return setmetatable({ size = size, next = nil }, Disk)
end

local Towers = Benchmark.subclass()

function Towers:benchmark()
  self.piles = { false, false, false }   -- false stands for SOM's nil
  self:build_tower(1, 13)
  self.moves_done = 0
  self:move_disks(13, 1, 2)
  return self.moves_done
end

function Towers:verify_result(result)
  return result == 8191
end

function Towers:push_disk(disk, pile)
  local top = self.piles[pile]
  if top and disk.size >= top.size then
    error("Cannot put a big disk onto a smaller one")
  end
  disk.next = top
  self.piles[pile] = disk
end

function Towers:pop_disk_from(pile)
  local top = self.piles[pile]
  if not top then
    error("Attempting to remove a disk from an empty pile")
  end
  self.piles[pile] = top.next
  top.next = false
  return top
end

function Towers:move_top_disk(from_pile, to_pile)
  self:push_disk(self:pop_disk_from(from_pile), to_pile)
  self.moves_done = self.moves_done + 1
end

function Towers:build_tower(pile, disks)
  for k = 0, disks do
    self:push_disk(Disk.new(disks - k), pile)
  end
end

function Towers:move_disks(disks, from_pile, to_pile)
  if disks == 1 then
    self:move_top_disk(from_pile, to_pile)
  else
    local other_pile = 6 - from_pile - to_pile
    self:move_disks(disks - 1, from_pile, other_pile)
    self:move_top_disk(from_pile, to_pile)
    self:move_disks(disks - 1, other_pile, to_pile)
  end
end

return Towers
