-- Json: a recursive-descent JSON parser run over an embedded JSON document
-- of about 2.7 KB (objects, arrays, strings with escapes, numbers in all
-- notations, literals).  The result is a checksum computed over the parsed
-- value tree.  Exercises string access (one-character strings), substring
-- and concatenation, polymorphic sends, Vector and Dictionary.
local Benchmark = require("benchmark")
local Vector = require("som").Vector

-- JSON values -----------------------------------------------------------------
local JsonLiteral = {}
JsonLiteral.__index = JsonLiteral
local function new_literal(code) return setmetatable({ code = code }, JsonLiteral) end
local JSON_TRUE, JSON_FALSE, JSON_NULL = new_literal(1), new_literal(2), new_literal(3)
function JsonLiteral:checksum() return self.code end

local JsonNumber = {}
JsonNumber.__index = JsonNumber
function JsonNumber.new(text) return setmetatable({ text = text }, JsonNumber) end
function JsonNumber:checksum() return 7 + #self.text end

local JsonString = {}
JsonString.__index = JsonString
function JsonString.new(s) return setmetatable({ string = s }, JsonString) end
function JsonString:checksum() return 1 + #self.string end

local JsonArray = {}
JsonArray.__index = JsonArray
function JsonArray.new() return setmetatable({ values = Vector.new() }, JsonArray) end
function JsonArray:add(value) self.values:append(value) end
function JsonArray:at(i) return self.values:at(i) end
function JsonArray:checksum()
  local sum = 1
  self.values:each(function(v) sum = sum + v:checksum() end)
  return sum
end

local JsonObject = {}
JsonObject.__index = JsonObject
function JsonObject.new()
  return setmetatable({ names = Vector.new(), table = {} }, JsonObject)
end
function JsonObject:add(name, value)
  self.names:append(name)
  self.table[name] = value
end
function JsonObject:at(name) return self.table[name] end
function JsonObject:checksum()
  local sum = 1
  self.names:each(function(name)
    sum = sum + #name + self:at(name):checksum()
  end)
  return sum
end

-- The parser ------------------------------------------------------------------
local Parser = {}
Parser.__index = Parser

function Parser.new(input)
  return setmetatable({ input = input, length = #input, index = 0, current = false }, Parser)
end

function Parser:parse()
  self:read()
  self:skip_white_space()
  local result = self:read_value()
  self:skip_white_space()
  if self.current then error("JSON: unexpected character at end") end
  return result
end

function Parser:read()
  self.index = self.index + 1
  if self.index > self.length then
    self.current = false
  else
    self.current = string.sub(self.input, self.index, self.index)
  end
end

function Parser:substring(from, to)
  if to < from then return "" end
  return string.sub(self.input, from, to)
end

function Parser:read_char(ch)
  if self.current ~= ch then return false end
  self:read()
  return true
end

function Parser:expect(ch)
  if not self:read_char(ch) then error("JSON: expected " .. ch) end
end

function Parser:is_digit()
  local c = self.current
  return c and c >= "0" and c <= "9"
end

function Parser:is_hex_digit()
  if self:is_digit() then return true end
  local c = self.current
  if not c then return false end
  for i = 1, 12 do
    if string.sub("abcdefABCDEF", i, i) == c then return true end
  end
  return false
end

function Parser:read_digit()
  if not self:is_digit() then return false end
  self:read()
  return true
end

function Parser:is_white_space()
  local c = self.current
  return c == " " or c == "\t" or c == "\n" or c == "\r"
end

function Parser:skip_white_space()
  while self:is_white_space() do
    self:read()
  end
end

function Parser:read_value()
  local c = self.current
  if c == "n" then return self:read_literal("null", JSON_NULL) end
  if c == "t" then return self:read_literal("true", JSON_TRUE) end
  if c == "f" then return self:read_literal("false", JSON_FALSE) end
  if c == '"' then return JsonString.new(self:read_string_internal()) end
  if c == "[" then return self:read_array() end
  if c == "{" then return self:read_object() end
  if c == "-" or self:is_digit() then return self:read_number() end
  error("JSON: unexpected character " .. tostring(c))
end

function Parser:read_literal(word, value)
  for i = 1, #word do
    self:expect(string.sub(word, i, i))
  end
  return value
end

function Parser:read_array()
  self:read()
  local array = JsonArray.new()
  self:skip_white_space()
  if self:read_char("]") then return array end
  repeat
    self:skip_white_space()
    array:add(self:read_value())
    self:skip_white_space()
  until not self:read_char(",")
  self:expect("]")
  return array
end

function Parser:read_object()
  self:read()
  local object = JsonObject.new()
  self:skip_white_space()
  if self:read_char("}") then return object end
  repeat
    self:skip_white_space()
    if self.current ~= '"' then error("JSON: expected a name") end
    local name = self:read_string_internal()
    self:skip_white_space()
    self:expect(":")
    self:skip_white_space()
    object:add(name, self:read_value())
    self:skip_white_space()
  until not self:read_char(",")
  self:expect("}")
  return object
end

function Parser:read_string_internal()
  self:read()   -- the opening quote
  local buffer = ""
  local start = self.index
  while self.current ~= '"' do
    if self.current == "\\" then
      buffer = buffer .. self:substring(start, self.index - 1)
      self:read()
      buffer = buffer .. self:read_escape()
      start = self.index
    elseif not self.current then
      error("JSON: unterminated string")
    else
      self:read()
    end
  end
  local result = buffer .. self:substring(start, self.index - 1)
  self:read()   -- the closing quote
  return result
end

-- current is the character after the backslash; answers the decoded text
-- and moves past the escape.
function Parser:read_escape()
  local decoded = self:decode_escape(self.current)
  self:read()
  return decoded
end

-- A \uXXXX escape decodes to "?" (SOM strings have no characters beyond
-- bytes); its four hex digits are checked.
function Parser:decode_escape(c)
  if c == '"' or c == "/" or c == "\\" then return c end
  if c == "b" then return "\b" end
  if c == "f" then return "\f" end
  if c == "n" then return "\n" end
  if c == "r" then return "\r" end
  if c == "t" then return "\t" end
  if c == "u" then
    for _ = 1, 4 do
      self:read()
      if not self:is_hex_digit() then error("JSON: bad unicode escape") end
    end
    return "?"
  end
  error("JSON: bad escape")
end

function Parser:read_number()
  local start = self.index
  self:read_char("-")
  local first = self.current
  if not self:read_digit() then error("JSON: expected a digit") end
  if first ~= "0" then
    while self:read_digit() do end
  end
  if self:read_char(".") then
    if not self:read_digit() then error("JSON: expected a digit") end
    while self:read_digit() do end
  end
  if self:read_char("e") or self:read_char("E") then
    if not self:read_char("+") then self:read_char("-") end
    if not self:read_digit() then error("JSON: expected a digit") end
    while self:read_digit() do end
  end
  return JsonNumber.new(self:substring(start, self.index - 1))
end

-- The benchmark -----------------------------------------------------------------
local Json = Benchmark.subclass()

function Json:benchmark()
  local root = Parser.new(self:json_text()):parse()
  -- a few look-ups, as a client of the parsed document would do
  local departments = root:at("departments")
  local first_item = departments:at(1):at("items"):at(1)
  if first_item:at("sku").string ~= "F-1001" then error("JSON: wrong look-up") end
  return root:checksum()
end

function Json:verify_result(result)
  return result == 2113
end

function Json:json_text()
  return [=[
{
  "library": "sqvm benchmark shop",
  "version": 3,
  "updated": "2024-05-17T10:42:00Z",
  "open": true,
  "closedOn": null,
  "address": {"street": "12 Parser Lane", "city": "Bern", "zip": "3011",
              "geo": {"lat": 46.94809, "lon": 7.44744, "alt": 540}},
  "tags": ["books", "music", "games", "", "caf\u00e9 corner"],
  "limits": {"maxItems": 250, "minOrder": 0, "discount": 0.15, "tax": 7.7e-2,
             "fee": -2.5E-3, "big": 6.02e+23, "small": 1e-9},
  "departments": [
    {"id": 1, "name": "Fiction", "floor": 0, "staff": ["Ann", "Bob", "Cleo"],
     "items": [
       {"sku": "F-1001", "title": "The \"Quoted\" Novel", "price": 12.5, "stock": 14, "used": false},
       {"sku": "F-1002", "title": "Back\\slash Stories", "price": 9.99, "stock": 0, "used": true},
       {"sku": "F-1003", "title": "Line\nBreaks", "price": 21, "stock": 3, "used": false},
       {"sku": "F-1004", "title": "Tabs\tand/or\/Slashes", "price": 7.25, "stock": 120, "used": false}
     ]},
    {"id": 2, "name": "Science", "floor": 1, "staff": ["Dora"],
     "items": [
       {"sku": "S-2001", "title": "Numbers", "price": 42, "stock": 7, "used": false,
        "ratings": [5, 4, 4, 3, 5, 5, 2, 4]},
       {"sku": "S-2002", "title": "Orbits and Bodies", "price": 35.5, "stock": 2, "used": true,
        "ratings": []},
       {"sku": "S-2003", "title": "Fractals", "price": 18.75, "stock": 11, "used": false,
        "ratings": [3, 3, 4], "extra": {}}
     ]},
    {"id": 3, "name": "Music", "floor": 1, "staff": [],
     "items": [
       {"sku": "M-3001", "title": "Fugues", "price": 15, "stock": 5, "used": false,
        "tracks": [{"n": 1, "len": 312}, {"n": 2, "len": 287}, {"n": 3, "len": 401}]},
       {"sku": "M-3002", "title": "Etudes", "price": 13.2, "stock": 9, "used": true,
        "tracks": [{"n": 1, "len": 198}, {"n": 2, "len": 243}]}
     ]},
    {"id": 4, "name": "Games", "floor": 2, "staff": ["Eve", "Finn"],
     "items": [
       {"sku": "G-4001", "title": "Queens and Towers", "price": 29.9, "stock": 4, "used": false,
        "players": {"min": 1, "max": 4}, "ages": [8, 99]},
       {"sku": "G-4002", "title": "Richards' Scheduler", "price": 54, "stock": 1, "used": false,
        "players": {"min": 2, "max": 6}, "ages": [12, 99]}
     ]}
  ],
  "matrix": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
  "history": [
    {"year": 2019, "sales": 10450, "growth": -0.031},
    {"year": 2020, "sales": 8120, "growth": -0.223},
    {"year": 2021, "sales": 11905, "growth": 0.466},
    {"year": 2022, "sales": 13377, "growth": 0.1236},
    {"year": 2023, "sales": 14002, "growth": 0.0467}
  ],
  "notes": "Escapes: \\n \\t \\\" and unicode \u0041\u0062\u0063 all decode.",
  "empty": {"a": [], "b": {}, "c": "", "d": [[]], "e": [{}]}
}
]=]
end

return Json
