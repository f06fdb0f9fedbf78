-- The checker's program runner: runs the programs listed in /.eval/runs.json one after the other on this computer,
-- exactly as the agent host's run_program does (own environment with arg, shell and require; output captured with
-- ccagent.capture; errors with their traceback), and writes the outcomes to /.eval/out.json after each run, so a
-- run that never ends still leaves the earlier outcomes. /.eval is a host folder mounted outside the computer's disk.
package.path = "/ccagent/?.lua;/ccagent/?/init.lua;" .. package.path
local capture = require "ccagent.capture"
local json = require "ccagent.json"

local function read_all(p)
    local h = fs.open(p, "r")
    local s = h.readAll() or ""
    h.close()
    return s
end

local function save(results)
    local h = fs.open("/.eval/out.json", "w")
    h.write(json.encode(json.array(results)))
    h.close()
end

local function env_for(path, argv)
    local env = setmetatable({}, { __index = _G })
    env.shell = shell
    env.arg = { [0] = "/" .. path }
    for i, a in ipairs(argv) do env.arg[i] = a end
    local ok, make = pcall(require, "cc.require")
    if ok and make and make.make then env.require, env.package = make.make(env, fs.getDir(path)) end
    return env
end

local function run_one(r)
    local path = (r.program or ""):gsub("^/+", "")
    if not fs.exists(path) and fs.exists(path .. ".lua") then path = path .. ".lua" end
    if path == "" or not fs.exists(path) or fs.isDir(path) then
        return { ok = false, output = "", error = "no such program: /" .. path }
    end
    local argv = {}
    for i, a in ipairs(r.args or {}) do argv[i] = tostring(a) end
    local chunk, serr = load(read_all(path), "@/" .. path, "t", env_for(path, argv))
    if not chunk then return { ok = false, output = "", error = tostring(serr) } end
    local ran, output, ok, err = capture.run(function()
        return xpcall(chunk, debug.traceback, table.unpack(argv))
    end)
    if not ran then return { ok = false, output = output, error = tostring(ok) } end
    if ok == true then return { ok = true, output = output } end
    return { ok = false, output = output, error = tostring(err or "error") }
end

local results = {}
for i, r in ipairs(json.decode(read_all("/.eval/runs.json"))) do
    results[i] = run_one(r)
    save(results)
end
save(results)
os.shutdown(0)
