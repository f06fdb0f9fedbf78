-- JSON edge cases that break the wire when textutils.serializeJSON is used naively.
local t = require "helper"
local json = require "ccagent.json"

t.test("empty table encodes as an object (command args {} must not become [])", function()
    t.eq(json.encode({}), "{}")
    t.eq(json.encode({ args = {} }), '{"args":{}}')
end)

t.test("json.array marks an empty list so allowed_commands=[] stays an array", function()
    t.eq(json.encode({ allowed_commands = json.array() }), '{"allowed_commands":[]}')
end)

t.test("textutils.empty_json_array is honoured when present", function()
    local marker = setmetatable({}, { __tostring = function() return "[]" end })
    textutils = { empty_json_array = marker }
    t.eq(json.encode({ a = marker }), '{"a":[]}')
    textutils = nil
end)

t.test("sequences encode as arrays, mixed keys as objects", function()
    t.eq(json.encode({ 1, 2, 3 }), "[1,2,3]")
    t.eq(json.encode({ [1] = "a", x = "b" }), '{"1":"a","x":"b"}')
end)

t.test("nil and json.null encode as null; NaN/inf as null (no invalid tokens)", function()
    t.eq(json.encode(nil), "null")
    t.eq(json.encode({ json.null, 1 }), "[null,1]")
    t.eq(json.encode({ n = 0 / 0, p = math.huge, m = -math.huge }), '{"m":null,"n":null,"p":null}')
end)

t.test("integers print without exponent or .0, fractions round-trip", function()
    t.eq(json.encode(3), "3")
    t.eq(json.encode(-42), "-42")
    t.eq(json.encode(2 ^ 40), "1099511627776")
    t.eq(json.encode(0.1), "0.1")
    t.eq(json.decode(json.encode(1 / 3)), 1 / 3)
    t.eq(json.decode(json.encode(1e300)), 1e300)
end)

t.test("control characters, quotes and backslashes are escaped", function()
    t.eq(json.encode('a"b\\c\n\t\0\127'), '"a\\"b\\\\c\\n\\t\\u0000\\u007f"')
end)

t.test("UTF-8 text is escaped as code points (ASCII-only output)", function()
    t.eq(json.encode("é"), '"\\u00e9"')
    t.eq(json.encode("€"), '"\\u20ac"')
    t.eq(json.encode("\240\159\152\128"), '"\\ud83d\\ude00"') -- U+1F600 as a surrogate pair
end)

t.test("bytes that are not UTF-8 are taken as Latin-1, never dropped", function()
    t.eq(json.encode("\233t\255"), '"\\u00e9t\\u00ff"')
    t.eq(json.encode("\192\128"), '"\\u00c0\\u0080"') -- overlong encoding is invalid
end)

t.test("decoding joins surrogate pairs into 4-byte UTF-8", function()
    t.eq(json.decode('"\\ud83d\\ude00"'), "\240\159\152\128")
    t.eq(json.decode('"\\u00e9"'), "\195\169")
end)

t.test("a lone surrogate decodes to U+FFFD instead of invalid UTF-8", function()
    t.eq(json.decode('"\\ud83dx"'), "\239\191\189x")
end)

t.test("raw UTF-8 passes through decoding unchanged", function()
    t.eq(json.decode('"h\195\169"'), "h\195\169")
end)

t.test("[] and {} round-trip as written", function()
    t.eq(json.encode(json.decode('{"a":[],"b":{}}')), '{"a":[],"b":{}}')
    t.truthy(json.is_array(json.decode("[]")), "decoded [] is an array")
    t.truthy(not json.is_array(json.decode("{}")), "decoded {} is not an array")
end)

t.test("null is absent in objects and json.null inside arrays (positions kept)", function()
    local v = json.decode('{"a":null,"b":[1,null,3]}')
    t.eq(v.a, nil)
    t.eq(#v.b, 3)
    t.eq(v.b[2], json.null)
    t.eq(json.encode(v.b), "[1,null,3]")
end)

t.test("numbers decode, including exponents and negatives", function()
    t.same(json.decode("[0,-1.5,2e3,1E-2]"), json.array({ 0, -1.5, 2000, 0.01 }))
end)

t.test("invalid JSON returns nil and a reason with the position", function()
    local v, err = json.decode('{"a":')
    t.eq(v, nil)
    t.truthy(err:find("invalid_json") and err:find("byte"), "reason " .. tostring(err))
    t.eq(json.decode("[1,2] x"), nil)
    t.eq(json.decode("01"), nil)
    t.eq(json.decode('"a\nb"'), nil)
    t.eq(json.decode("{'a':1}"), nil)
    t.eq(json.decode(""), nil)
    t.eq(json.decode(nil), nil)
end)

t.test("functions and cycles are refused with a reason, not a crash", function()
    local v, err = json.encode({ f = print })
    t.eq(v, nil)
    t.truthy(err:find("function"), err)
    local c = {}
    c.self = c
    local v2, err2 = json.encode(c)
    t.eq(v2, nil)
    t.truthy(err2:find("itself"), err2)
end)

t.test("a 300 KiB string round-trips byte for byte", function()
    local parts = {}
    for i = 0, 255 do parts[#parts + 1] = string.char(i) end
    local s = table.concat(parts):rep(1200)
    local back = json.decode(json.encode(s))
    -- Non-UTF-8 bytes come back as their Latin-1 code points in UTF-8, ASCII exactly.
    t.eq(json.decode(json.encode("plain ascii\n")), "plain ascii\n")
    t.truthy(#back >= #s, "nothing lost")
    t.eq(back:sub(1, 128), s:sub(1, 128))
end)

t.test("object keys are sorted so output is deterministic", function()
    t.eq(json.encode({ b = 1, a = 2, c = { z = 1, y = 2 } }), '{"a":2,"b":1,"c":{"y":2,"z":1}}')
end)

t.done()
