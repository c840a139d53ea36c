-- BinaryTrees: allocation-heavy construction and traversal of perfect binary
-- trees (the Benchmarks Game algorithm with maximum depth 10): a stretch
-- tree, a long-lived tree and many short-lived trees of depths 4, 6, 8, 10.
local Benchmark = require("benchmark")

local TreeNode = {}
TreeNode.__index = TreeNode

function TreeNode.new(left, right)
  return setmetatable({ left = left, right = right }, TreeNode)
end

function TreeNode:check()
  if not self.left then return 1 end
  return 1 + self.left:check() + self.right:check()
end

local BinaryTrees = Benchmark.subclass()

function BinaryTrees:bottom_up_tree(depth)
  if depth > 0 then
    return TreeNode.new(self:bottom_up_tree(depth - 1), self:bottom_up_tree(depth - 1))
  end
  return TreeNode.new(false, false)
end

function BinaryTrees:benchmark()
  local min_depth, max_depth = 4, 10
  local total = self:bottom_up_tree(max_depth + 1):check()
  local long_lived = self:bottom_up_tree(max_depth)
  local depth = min_depth
  while depth <= max_depth do
    local iterations = 1 << (max_depth - depth + min_depth)
    local check = 0
    for _ = 1, iterations do
      check = check + self:bottom_up_tree(depth):check()
    end
    total = total + check
    depth = depth + 2
  end
  return total + long_lived:check()
end

function BinaryTrees:verify_result(result)
  return result == 135854
end

return BinaryTrees
