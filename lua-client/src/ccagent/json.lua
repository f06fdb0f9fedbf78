--- JSON for the ccagent wire protocol.
--
-- `textutils.serializeJSON` has gaps that matter on the wire: an empty table is
-- always `{}`, NaN becomes the invalid token `nan`, and without the unicode
-- option every byte above 127 is escaped on its own (mojibake). Its parser
-- does not join UTF-16 surrogate pairs. This module is a small, exact encoder
-- and decoder that behaves the same on CraftOS and on plain Lua 5.2:
--
-- * Output is pure ASCII: valid UTF-8 sequences become `\uXXXX` escapes
--   (surrogate pairs above U+FFFF); a byte that is not valid UTF-8 is taken as
--   Latin-1 (`\u00XX`), the way CC's terminal shows it. Byte length therefore
--   equals UTF-16 length, which keeps chunking exact.
-- * An empty table encodes as `{}` unless marked with @{array} (or is
--   `textutils.empty_json_array`); decoded arrays keep the mark, so `[]`
--   round-trips.
-- * `nil` and @{null} (and `textutils.json_null`) encode as `null`. Decoded
--   `null` is `nil` in objects and @{null} inside arrays (so positions hold).
-- * NaN and infinities encode as `null` (JSON has no such numbers).
--
-- @module ccagent.json
local M = {}

local type, pairs, tostring, tonumber, setmetatable, getmetatable, error, pcall =
    type, pairs, tostring, tonumber, setmetatable, getmetatable, error, pcall
local s_byte, s_char, s_find, s_format, s_gsub, s_sub = string.byte, string.char, string.find, string.format,
    string.gsub, string.sub
local concat, sort, floor, huge = table.concat, table.sort, math.floor, math.huge

--- Sentinel for JSON `null` where Lua `nil` cannot stand (inside arrays).
M.null = setmetatable({}, { __tostring = function() return "null" end })

local array_mt = { __jsontype = "array" }
local object_mt = { __jsontype = "object" }

--- Mark a table to encode as a JSON array, even when empty.
-- @tparam[opt] table t the table (a new one when nil)
-- @treturn table the same table
function M.array(t)
    return setmetatable(t or {}, array_mt)
end

--- Mark a table to encode as a JSON object, even when it looks like a list.
-- @tparam[opt] table t the table (a new one when nil)
-- @treturn table the same table
function M.object(t)
    return setmetatable(t or {}, object_mt)
end

local function is_null(v)
    if v == nil or v == M.null then return true end
    local tu = rawget(_G, "textutils")
    return type(tu) == "table" and tu.json_null ~= nil and v == tu.json_null
end

local function is_empty_array_marker(v)
    local tu = rawget(_G, "textutils")
    return type(tu) == "table" and tu.empty_json_array ~= nil and v == tu.empty_json_array
end

--- Whether a decoded or marked table is a JSON array.
-- @tparam table t
-- @treturn boolean
function M.is_array(t)
    if type(t) ~= "table" then return false end
    if is_empty_array_marker(t) then return true end
    local mt = getmetatable(t)
    if mt == array_mt then return true end
    if mt == object_mt then return false end
    local n = 0
    for k in pairs(t) do
        if type(k) ~= "number" or k < 1 or floor(k) ~= k then return false end
        n = n + 1
    end
    return n > 0 and n == #t
end

-- Encoding ------------------------------------------------------------------

local simple_escapes = {
    ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
    ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function escape_control(c)
    return simple_escapes[c] or s_format("\\u%04x", s_byte(c))
end

local function u_escape(cp)
    if cp < 0x10000 then return s_format("\\u%04x", cp) end
    cp = cp - 0x10000
    local hi = 0xD800 + floor(cp / 0x400)
    local lo = 0xDC00 + cp % 0x400
    return s_format("\\u%04x\\u%04x", hi, lo)
end

-- Escape a run of bytes >= 0x80: decode strict UTF-8, fall back to Latin-1 per byte.
local function escape_high(run)
    local out, i, n = {}, 1, #run
    while i <= n do
        local c = s_byte(run, i)
        local len, cp, min = 0, nil, 0
        if c >= 0xC2 and c <= 0xDF then len, cp, min = 2, c - 0xC0, 0x80
        elseif c >= 0xE0 and c <= 0xEF then len, cp, min = 3, c - 0xE0, 0x800
        elseif c >= 0xF0 and c <= 0xF4 then len, cp, min = 4, c - 0xF0, 0x10000
        end
        local ok = len > 0 and i + len - 1 <= n
        if ok then
            for j = 1, len - 1 do
                local cc = s_byte(run, i + j)
                if cc < 0x80 or cc > 0xBF then ok = false break end
                cp = cp * 64 + (cc - 0x80)
            end
            if ok and (cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF)) then ok = false end
        end
        if ok then
            out[#out + 1] = u_escape(cp)
            i = i + len
        else
            out[#out + 1] = s_format("\\u%04x", c)
            i = i + 1
        end
    end
    return concat(out)
end

local function encode_string(s)
    s = s_gsub(s, '[%c"\\]', escape_control)
    if s_find(s, "[\128-\255]") then s = s_gsub(s, "[\128-\255]+", escape_high) end
    return '"' .. s .. '"'
end

local function encode_number(n)
    if n ~= n or n == huge or n == -huge then return "null" end
    if floor(n) == n and n > -2 ^ 53 and n < 2 ^ 53 then return s_format("%d", n) end
    local s = s_format("%.14g", n)
    if tonumber(s) ~= n then s = s_format("%.17g", n) end
    return s
end

local encode_value

local function encode_table(t, buf, seen, depth)
    if seen[t] then error("cannot encode a table that contains itself", 0) end
    if depth > 512 then error("nesting too deep", 0) end
    seen[t] = true
    if M.is_array(t) then
        buf[#buf + 1] = "["
        for i = 1, #t do
            if i > 1 then buf[#buf + 1] = "," end
            encode_value(t[i], buf, seen, depth + 1)
        end
        buf[#buf + 1] = "]"
    else
        local keys = {}
        for k, v in pairs(t) do
            local kt = type(k)
            if kt == "number" then k = encode_number(k)
            elseif kt ~= "string" then error("cannot encode a " .. kt .. " key", 0) end
            keys[#keys + 1] = { k, v }
        end
        sort(keys, function(a, b) return a[1] < b[1] end)
        buf[#buf + 1] = "{"
        for i = 1, #keys do
            if i > 1 then buf[#buf + 1] = "," end
            buf[#buf + 1] = encode_string(keys[i][1])
            buf[#buf + 1] = ":"
            encode_value(keys[i][2], buf, seen, depth + 1)
        end
        buf[#buf + 1] = "}"
    end
    seen[t] = nil
end

encode_value = function(v, buf, seen, depth)
    local vt = type(v)
    if is_null(v) then buf[#buf + 1] = "null"
    elseif vt == "string" then buf[#buf + 1] = encode_string(v)
    elseif vt == "number" then buf[#buf + 1] = encode_number(v)
    elseif vt == "boolean" then buf[#buf + 1] = v and "true" or "false"
    elseif vt == "table" then
        if is_empty_array_marker(v) then buf[#buf + 1] = "[]" else encode_table(v, buf, seen, depth) end
    else
        error("cannot encode a " .. vt, 0)
    end
end

--- Encode a Lua value as ASCII-only JSON text.
-- @param value any JSON-compatible value
-- @treturn[1] string the JSON text
-- @treturn[2] nil
-- @treturn[2] string why it cannot be encoded (function, cycle, bad key)
function M.encode(value)
    local buf = {}
    local ok, err = pcall(encode_value, value, buf, {}, 0)
    if not ok then return nil, tostring(err) end
    return concat(buf)
end

-- Decoding ------------------------------------------------------------------

local function utf8_char(cp)
    if cp < 0x80 then return s_char(cp) end
    if cp < 0x800 then return s_char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
    if cp < 0x10000 then
        return s_char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
    end
    return s_char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64, 0x80 + floor(cp / 64) % 64,
        0x80 + cp % 64)
end

--- Encode one code point as UTF-8 (exposed for tests and tools).
-- @tparam number cp the code point
-- @treturn string
M.utf8_char = utf8_char

local unescapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function fail(pos, what)
    error({ pos = pos, msg = what }, 0)
end

local decode_value

local function skip_ws(s, pos)
    local _, e = s_find(s, "^[ \t\r\n]*", pos)
    return e + 1
end

local function decode_string(s, pos)
    -- pos is just after the opening quote
    local buf = {}
    while true do
        local i = s_find(s, '["\\%c]', pos)
        if not i then fail(pos, "unterminated string") end
        if i > pos then buf[#buf + 1] = s_sub(s, pos, i - 1) end
        local c = s_sub(s, i, i)
        if c == '"' then return concat(buf), i + 1 end
        if c ~= "\\" then fail(i, "control character in string") end
        local e = s_sub(s, i + 1, i + 1)
        if e == "u" then
            local hex = s_sub(s, i + 2, i + 5)
            if not s_find(hex, "^%x%x%x%x$") then fail(i, "bad \\u escape") end
            local cp = tonumber(hex, 16)
            pos = i + 6
            if cp >= 0xD800 and cp <= 0xDBFF then
                local hex2 = s_sub(s, pos, pos + 5)
                local lo = s_find(hex2, "^\\u%x%x%x%x$") and tonumber(s_sub(hex2, 3), 16)
                if lo and lo >= 0xDC00 and lo <= 0xDFFF then
                    cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
                    pos = pos + 6
                else
                    cp = 0xFFFD
                end
            elseif cp >= 0xDC00 and cp <= 0xDFFF then
                cp = 0xFFFD
            end
            buf[#buf + 1] = utf8_char(cp)
        else
            local r = unescapes[e]
            if not r then fail(i, "bad escape") end
            buf[#buf + 1] = r
            pos = i + 2
        end
    end
end

local function decode_array(s, pos, depth)
    local t, n = setmetatable({}, array_mt), 0
    pos = skip_ws(s, pos)
    if s_sub(s, pos, pos) == "]" then return t, pos + 1 end
    while true do
        local v
        v, pos = decode_value(s, pos, depth + 1)
        n = n + 1
        if v == nil then v = M.null end
        t[n] = v
        pos = skip_ws(s, pos)
        local c = s_sub(s, pos, pos)
        if c == "]" then return t, pos + 1 end
        if c ~= "," then fail(pos, "expected ',' or ']'") end
        pos = pos + 1
    end
end

local function decode_object(s, pos, depth)
    local t = setmetatable({}, object_mt)
    pos = skip_ws(s, pos)
    if s_sub(s, pos, pos) == "}" then return t, pos + 1 end
    while true do
        if s_sub(s, pos, pos) ~= '"' then fail(pos, "expected a string key") end
        local k
        k, pos = decode_string(s, pos + 1)
        pos = skip_ws(s, pos)
        if s_sub(s, pos, pos) ~= ":" then fail(pos, "expected ':'") end
        local v
        v, pos = decode_value(s, pos + 1, depth + 1)
        t[k] = v
        pos = skip_ws(s, pos)
        local c = s_sub(s, pos, pos)
        if c == "}" then return t, pos + 1 end
        if c ~= "," then fail(pos, "expected ',' or '}'") end
        pos = skip_ws(s, pos + 1)
    end
end

decode_value = function(s, pos, depth)
    if depth > 512 then fail(pos, "nesting too deep") end
    pos = skip_ws(s, pos)
    local c = s_sub(s, pos, pos)
    if c == "{" then return decode_object(s, pos + 1, depth)
    elseif c == "[" then return decode_array(s, pos + 1, depth)
    elseif c == '"' then return decode_string(s, pos + 1)
    elseif c == "t" and s_sub(s, pos, pos + 3) == "true" then return true, pos + 4
    elseif c == "f" and s_sub(s, pos, pos + 4) == "false" then return false, pos + 5
    elseif c == "n" and s_sub(s, pos, pos + 3) == "null" then return nil, pos + 4
    end
    local _, e = s_find(s, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if e then
        local text = s_sub(s, pos, e)
        local n = tonumber(text)
        if n and s_find(text, "^-?0%d") == nil and s_find(text, "%.$") == nil then return n, e + 1 end
    end
    if c == "" then fail(pos, "unexpected end of input") end
    fail(pos, "unexpected character '" .. c .. "'")
end

--- Decode JSON text.
-- @tparam string text
-- @return[1] the value (tables for objects/arrays; arrays are marked with @{array})
-- @treturn[2] nil
-- @treturn[2] string `invalid_json: <reason> at byte <n>`
function M.decode(text)
    if type(text) ~= "string" then return nil, "invalid_json: expected a string, got " .. type(text) end
    local ok, v, pos = pcall(decode_value, text, 1, 0)
    if not ok then
        if type(v) == "table" then return nil, ("invalid_json: %s at byte %d"):format(v.msg, v.pos) end
        return nil, "invalid_json: " .. tostring(v)
    end
    pos = skip_ws(text, pos)
    if pos <= #text then return nil, ("invalid_json: trailing characters at byte %d"):format(pos) end
    if v == nil then return M.null end
    return v
end

return M
