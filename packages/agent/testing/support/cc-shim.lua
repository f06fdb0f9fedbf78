-- A small CraftOS-like environment for running a ComputerCraft program under plain Lua 5.2 in tests.
--
-- Usage: lua5.2 cc-shim.lua <root> <program> [args...]
--
-- The program runs with `fs`, `textutils`, `term`, `colors`, `shell`, `print`, `write`, `printError`, `sleep`
-- and `arg` as on a CC:Tweaked computer whose root directory is <root>, and without `io`, `os.execute` or
-- `require` of host modules. Its terminal output goes to stdout. A Lua error ends the run with the error and its
-- stack traceback on stderr and exit status 1 (what the agent host reports as `{ok=false, error=...}`).
local root, program = arg[1], arg[2]
if not root or not program then
    io.stderr:write("usage: lua5.2 cc-shim.lua <root> <program> [args...]\n")
    os.exit(2)
end
local argv = {}
for i = 3, #arg do argv[#argv + 1] = arg[i] end

local host_io, host_os = io, os

-- Paths ----------------------------------------------------------------------

local function normalize(path)
    local parts = {}
    for part in tostring(path):gmatch("[^/\\]+") do
        if part == ".." then
            if #parts == 0 then error("/" .. tostring(path) .. ": Invalid Path", 3) end
            parts[#parts] = nil
        elseif part ~= "." and part ~= "" then
            parts[#parts + 1] = part
        end
    end
    return table.concat(parts, "/")
end

local function real(path)
    local rel = normalize(path)
    if rel == "" then return root end
    return root .. "/" .. rel
end

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function exists(p) return host_os.rename(p, p) ~= nil end

local function is_dir(p)
    local f = host_io.open(p, "r")
    if not f then return false end
    local _, _, code = f:read(1)
    f:close()
    return code == 21
end

-- fs -------------------------------------------------------------------------

local fs = {}

function fs.combine(a, ...)
    local out = a or ""
    for _, b in ipairs({ ... }) do out = out .. "/" .. b end
    return normalize(out)
end
function fs.getName(p)
    local n = normalize(p):match("([^/]+)$")
    return n or "root"
end
function fs.getDir(p)
    local n = normalize(p)
    return n:match("^(.*)/[^/]+$") or ""
end
function fs.exists(p) return exists(real(p)) end
function fs.isDir(p) return normalize(p) == "" or is_dir(real(p)) end
function fs.isReadOnly(p) return normalize(p):sub(1, 3) == "rom" end
function fs.getSize(p)
    local f = host_io.open(real(p), "rb")
    if not f then error("/" .. normalize(p) .. ": No such file", 2) end
    local size = f:seek("end")
    f:close()
    return size
end
function fs.list(p)
    if not fs.isDir(p) then error("/" .. normalize(p) .. ": Not a directory", 2) end
    local out = {}
    local h = host_io.popen("ls -1A " .. quote(real(p)))
    for line in h:lines() do out[#out + 1] = line end
    h:close()
    table.sort(out)
    return out
end
function fs.makeDir(p) host_os.execute("mkdir -p " .. quote(real(p))) end
function fs.delete(p)
    if normalize(p) == "" then error("Access denied", 2) end
    host_os.execute("rm -rf " .. quote(real(p)))
end
function fs.move(a, b)
    if not fs.exists(a) then error("No such file", 2) end
    if fs.exists(b) then error("File exists", 2) end
    local d = fs.getDir(b)
    if d ~= "" then fs.makeDir(d) end
    host_os.rename(real(a), real(b))
end
function fs.copy(a, b)
    if not fs.exists(a) then error("No such file", 2) end
    if fs.exists(b) then error("File exists", 2) end
    host_os.execute("cp -r " .. quote(real(a)) .. " " .. quote(real(b)))
end

-- CC handles are called with a dot (h.readAll()); a colon call passes the handle first, which is skipped.
local function method(handle, fn)
    return function(first, ...)
        if first == handle then return fn(...) end
        return fn(first, ...)
    end
end

function fs.open(p, mode)
    if type(p) ~= "string" then error("bad argument #1 (string expected, got " .. type(p) .. ")", 2) end
    if type(mode) ~= "string" or not mode:match("^[rwa]b?$") then
        error("Unsupported mode", 2)
    end
    local path = real(p)
    if mode:sub(1, 1) == "r" then
        if not exists(path) or is_dir(path) then return nil, "/" .. normalize(p) .. ": No such file" end
    else
        if is_dir(path) then return nil, "/" .. normalize(p) .. ": Cannot write to directory" end
        local dir = fs.getDir(p)
        if dir ~= "" then fs.makeDir(dir) end
    end
    local f, err = host_io.open(path, mode:sub(1, 1) .. "b")
    if not f then return nil, "/" .. normalize(p) .. ": " .. tostring(err) end
    local h, closed = {}, false
    local function check() if closed then error("attempt to use a closed file", 3) end end
    if mode:sub(1, 1) == "r" then
        h.readAll = method(h, function() check(); return f:read("*a") or "" end)
        h.readLine = method(h, function(keep)
            check()
            local line = f:read(keep and "*L" or "*l")
            return line
        end)
        h.read = method(h, function(n) check(); return f:read(n or 1) end)
    else
        h.write = method(h, function(s) check(); f:write(tostring(s)) end)
        h.writeLine = method(h, function(s) check(); f:write(tostring(s), "\n") end)
        h.flush = method(h, function() check(); f:flush() end)
    end
    h.close = method(h, function() check(); closed = true; f:close() end)
    return h
end

-- textutils --------------------------------------------------------------------

local textutils = {}

local function serialize(v, indent, seen)
    local t = type(v)
    if t == "string" then return string.format("%q", v) end
    if t == "number" or t == "boolean" or t == "nil" then return tostring(v) end
    if t ~= "table" then error("Cannot serialize type " .. t, 0) end
    if seen[v] then error("Cannot serialize table with repeated entries", 0) end
    seen[v] = true
    if next(v) == nil then seen[v] = nil; return "{}" end
    local inner = indent .. "  "
    local out, done = { "{\n" }, {}
    for i, x in ipairs(v) do
        done[i] = true
        out[#out + 1] = inner .. serialize(x, inner, seen) .. ",\n"
    end
    local keys = {}
    for k in pairs(v) do if not done[k] then keys[#keys + 1] = k end end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
        local key
        if type(k) == "string" and k:match("^[%a_][%w_]*$") then key = k
        else key = "[ " .. serialize(k, inner, seen) .. " ]" end
        out[#out + 1] = inner .. key .. " = " .. serialize(v[k], inner, seen) .. ",\n"
    end
    out[#out + 1] = indent .. "}"
    seen[v] = nil
    return table.concat(out)
end

function textutils.serialize(v) return serialize(v, "", {}) end
textutils.serialise = textutils.serialize
function textutils.unserialize(s)
    if type(s) ~= "string" then return nil end
    local fn = load("return " .. s, "unserialize", "t", {})
    if not fn then return nil end
    local ok, v = pcall(fn)
    if ok then return v end
    return nil
end
textutils.unserialise = textutils.unserialize

-- terminal ----------------------------------------------------------------------

local out = host_io.stdout
local function write(s)
    s = tostring(s)
    out:write(s)
    local lines = 0
    for _ in s:gmatch("\n") do lines = lines + 1 end
    return lines
end
local function print(...)
    local n = select("#", ...)
    local parts = {}
    for i = 1, n do parts[i] = tostring((select(i, ...))) end
    return write(table.concat(parts, "\t") .. "\n")
end
local cx, cy = 1, 1
local term = {
    write = write,
    clear = function() end,
    clearLine = function() end,
    setCursorPos = function(x, y) cx, cy = x, y end,
    getCursorPos = function() return cx, cy end,
    getSize = function() return 51, 19 end,
    isColor = function() return false end,
    isColour = function() return false end,
    setTextColor = function() end,
    setTextColour = function() end,
    setBackgroundColor = function() end,
    setBackgroundColour = function() end,
    getTextColor = function() return 1 end,
    getTextColour = function() return 1 end,
    scroll = function() end,
    setCursorBlink = function() end,
}
term.current = function() return term end
term.redirect = function(t) return term end
local colors = {
    white = 1, orange = 2, magenta = 4, lightBlue = 8, yellow = 16, lime = 32, pink = 64, gray = 128,
    lightGray = 256, cyan = 512, purple = 1024, blue = 2048, brown = 4096, green = 8192, red = 16384, black = 32768,
}

-- environment ---------------------------------------------------------------------

local env = {
    _VERSION = _VERSION, _HOST = "ComputerCraft (ccagent test shim)", _CC_DEFAULT_SETTINGS = "",
    assert = assert, error = error, getmetatable = getmetatable, ipairs = ipairs, next = next, pairs = pairs,
    pcall = pcall, rawequal = rawequal, rawget = rawget, rawlen = rawlen, rawset = rawset, select = select,
    setmetatable = setmetatable, tonumber = tonumber, tostring = tostring, type = type, xpcall = xpcall,
    unpack = table.unpack,
    string = string, table = table, math = math, coroutine = coroutine, bit32 = bit32,
    print = print, write = write,
    printError = function(...) return print(...) end,
    read = function() return nil end,
    sleep = function() end,
    fs = fs, textutils = textutils, term = term, colors = colors, colours = colors,
    os = {
        clock = host_os.clock, time = host_os.time, date = host_os.date, difftime = host_os.difftime,
        epoch = function() return math.floor(host_os.time() * 1000) end,
        getComputerID = function() return 0 end,
        getComputerLabel = function() return nil end,
        sleep = function() end,
        pullEvent = function() error("os.pullEvent is not available in the test shim", 2) end,
        queueEvent = function() end,
    },
    shell = {
        dir = function() return "" end,
        resolve = function(p) return normalize(p) end,
        getRunningProgram = function() return normalize(program) end,
    },
}
env._G = env
env.load = function(chunk, name, mode, e) return load(chunk, name, mode, e or env) end
env.loadstring = function(s, name) return load(s, name, "t", env) end
env.arg = { [0] = normalize(program) }
for i, a in ipairs(argv) do env.arg[i] = a end

local path = real(program)
local f = host_io.open(path, "rb")
if not f then
    io.stderr:write("No such program\n")
    os.exit(1)
end
local code = f:read("*a")
f:close()
local chunk, serr = load(code, "@/" .. normalize(program), "t", env)
if not chunk then
    io.stderr:write(tostring(serr), "\n")
    os.exit(1)
end
-- The traceback keeps the program's frames only (the shim's own are not what a CC computer would show).
local ok, err = xpcall(function() return chunk(table.unpack(argv)) end, function(e)
    local lines = {}
    for line in debug.traceback(tostring(e), 2):gmatch("[^\n]+") do
        if not (line:find("cc-shim.lua", 1, true) or line:find("xpcall", 1, true) or line:find("[C]: in ?", 1, true)
                or line:find("(...tail calls...)", 1, true)) then
            lines[#lines + 1] = line
        end
    end
    return table.concat(lines, "\n")
end)
out:flush()
if not ok then
    io.stderr:write(err, "\n")
    os.exit(1)
end
os.exit(0)
