--- The agent host: offers a computer's core tools and its model-written tools to the orchestrator.
--
-- Core commands: `shell_exec`, `fs_list`, `fs_read`, `fs_write`, `fs_delete`,
-- `fs_move`, `run_program`; built-ins `computer_time`, `computer_info` (the
-- seed's `echo`, `get_time` and `get_system_info` run in the orchestrator);
-- tool management: `tool_list`, `tool_create`,
-- `tool_test`, `tool_set_status`, `tools_reload`; on a turtle the turtle tools of @{ccagent.turtle_tools}.
-- Model-written tools (see
-- @{ccagent.tools}) that are `active` are registered as commands of their own.
--
--     local host = require("ccagent.host").new(client, { shell = shell })
--     client:run()
--
-- @module ccagent.host
local expect_mod = require "cc.expect"
local json = require "ccagent.json"
local paths = require "ccagent.paths"
local capture = require "ccagent.capture"
local trace = require "ccagent.trace"
local tools = require "ccagent.tools"
local turtle_tools = require "ccagent.turtle_tools"

local expect, field = expect_mod.expect, expect_mod.field

local M = {}

--- Names of the built-in commands (model-written tools may not take them).
M.CORE = {
    "shell_exec", "fs_list", "fs_read", "fs_write", "fs_delete", "fs_move", "run_program",
    "computer_time", "computer_info",
    "tool_list", "tool_create", "tool_test", "tool_set_status", "tools_reload",
}

local function fail(code, message)
    error({ code = code, message = message }, 0)
end

local function arg_string(args, key, optional)
    local v = args[key]
    if v == nil and optional then return nil end
    if type(v) ~= "string" then fail("invalid_args", ("'%s' must be a string"):format(key)) end
    return v
end

local function obj(props, required)
    local r = json.array()
    for i, n in ipairs(required or {}) do r[i] = n end
    return { type = "object", properties = props, required = r }
end

local STR = { type = "string" }

--- A running host. Create with @{new}.
-- @type Host
local Host = {}
Host.__index = Host

--- Register the core tools (and the active model-written tools) on `client`.
-- @tparam table client a @{ccagent.Client}
-- @tparam[opt] table opts `shell` (the program's `shell`, needed by shell_exec/run_program),
--   `root` (sandbox root for the file tools; default the whole computer), `tools_dir` (default "/tools"),
--   `turtle` (the turtle API whose tools to offer; default the global `turtle`, present only on a turtle)
-- @treturn Host
-- @treturn {table...} problems loading model-written tools (`{name, error}`)
function M.new(client, opts)
    expect(1, client, "table")
    expect(2, opts, "table", "nil")
    opts = opts or {}
    field(opts, "shell", "table", "nil")
    field(opts, "root", "string", "nil")
    field(opts, "tools_dir", "string", "nil")
    field(opts, "turtle", "table", "nil")
    local root, rerr = paths.normalize(opts.root or "")
    -- an unusable sandbox must stop the host, never quietly become full access
    if not root then error("bad sandbox root: " .. rerr, 2) end
    local self = setmetatable({
        client = client,
        shell = opts.shell,
        root = root,
        tool_names = {},
    }, Host)
    self.registry = tools.open({ dir = opts.tools_dir or "/tools" })
    self.registry.reserved = {}
    for _, n in ipairs(M.CORE) do self.registry.reserved[n] = true end
    for _, n in ipairs(turtle_tools.NAMES) do self.registry.reserved[n] = true end
    self:_register_core()
    local turtle_api = opts.turtle or rawget(_G, "turtle")
    if turtle_api then self.turtle_tools = turtle_tools.register(client, turtle_api) end
    local report = self:reload_tools()
    return self, report.errors
end

function Host:_path(p)
    local real, err = paths.resolve(self.root, p)
    if not real then error(err, 0) end
    if self.root ~= "" and not fs.exists(self.root) then fs.makeDir(self.root) end
    return real
end

function Host:_env(path, args)
    local env = setmetatable({}, { __index = _G })
    env.shell = self.shell
    env.arg = { [0] = path }
    for i, a in ipairs(args or {}) do env.arg[i] = a end
    local ok, make = pcall(require, "cc.require")
    if ok and make and make.make then env.require, env.package = make.make(env, fs.getDir(path)) end
    return env
end

-- Core tools ------------------------------------------------------------------

function Host:shell_exec(args)
    local command = arg_string(args, "command")
    local sh = self.shell
    if not sh then fail("unavailable", "shell_exec needs the host to be started from the shell") end
    local previous_dir = sh.dir()
    if self.root ~= "" then sh.setDir(self:_path("")) end
    local ran, output, ok = capture.run(function() return sh.run(command) end)
    sh.setDir(previous_dir)
    if not ran then
        return { ok = false, output = output, error = tostring(ok) }
    end
    return { ok = ok == true, output = output }
end

function Host:fs_list(args)
    local path = self:_path(arg_string(args, "path", true) or "/")
    if not fs.exists(path) then fail("not_found", "no such directory: " .. paths.display(self.root, path)) end
    if not fs.isDir(path) then fail("not_a_directory", paths.display(self.root, path) .. " is a file") end
    local names = fs.list(path)
    table.sort(names)
    local entries = json.array()
    for i, n in ipairs(names) do
        local full = fs.combine(path, n)
        local dir = fs.isDir(full)
        entries[i] = { name = n, is_dir = dir, size = dir and 0 or fs.getSize(full) }
    end
    return { path = paths.display(self.root, path), entries = entries }
end

function Host:fs_read(args)
    local path = self:_path(arg_string(args, "path"))
    if not fs.exists(path) then fail("not_found", "no such file: " .. paths.display(self.root, path)) end
    if fs.isDir(path) then fail("is_a_directory", paths.display(self.root, path) .. " is a directory") end
    local h = fs.open(path, "rb")
    if not h then fail("io_error", "cannot open " .. path) end
    local content = h.readAll() or ""
    h.close()
    local size = #content
    local offset = tonumber(args.offset) or 0
    local length = tonumber(args.length)
    if offset > 0 or length then
        content = content:sub(offset + 1, length and offset + length or -1)
    end
    return { path = paths.display(self.root, path), content = content, size = size }
end

function Host:fs_write(args)
    local path = self:_path(arg_string(args, "path"))
    local content = arg_string(args, "content")
    if fs.isReadOnly(path) then fail("forbidden", paths.display(self.root, path) .. " is read-only") end
    if fs.exists(path) and fs.isDir(path) then fail("is_a_directory", paths.display(self.root, path)) end
    local dir = fs.getDir(path)
    if dir ~= "" and not fs.exists(dir) then fs.makeDir(dir) end
    local h, err = fs.open(path, args.append == true and "ab" or "wb")
    if not h then fail("io_error", "cannot write " .. path .. ": " .. tostring(err)) end
    h.write(content)
    h.close()
    return { path = paths.display(self.root, path), bytes = #content }
end

function Host:fs_delete(args)
    local path = self:_path(arg_string(args, "path"))
    if path == "" or path == self.root then fail("forbidden", "refusing to delete the root") end
    if not fs.exists(path) then fail("not_found", "no such file: " .. paths.display(self.root, path)) end
    if fs.isReadOnly(path) then fail("forbidden", paths.display(self.root, path) .. " is read-only") end
    fs.delete(path)
    return { path = paths.display(self.root, path), deleted = true }
end

function Host:fs_move(args)
    local from = self:_path(arg_string(args, "from"))
    local to = self:_path(arg_string(args, "to"))
    if not fs.exists(from) then fail("not_found", "no such file: " .. paths.display(self.root, from)) end
    if fs.isReadOnly(from) or fs.isReadOnly(to) then fail("forbidden", "read-only location") end
    if fs.exists(to) then
        if args.overwrite ~= true then
            fail("exists", paths.display(self.root, to) .. " exists (pass overwrite=true)")
        end
        fs.delete(to)
    end
    local dir = fs.getDir(to)
    if dir ~= "" and not fs.exists(dir) then fs.makeDir(dir) end
    fs.move(from, to)
    return { from = paths.display(self.root, from), to = paths.display(self.root, to) }
end

-- A failed run's result: `error` is the traceback without the client's own frames (what the model reads); the
-- untrimmed text is kept as `host_traceback` (for the step log) when anything was cut.
local function failed_run(result, text)
    local trimmed, removed = trace.trim(text)
    result.error = trimmed
    if removed then result.host_traceback = text end
    return result
end

local function traceback(err)
    -- `error({code=, message=})` from a program or tool reads as its message, never as "table: 0x…"
    if type(err) == "table" and err.message ~= nil then err = err.message end
    return debug.traceback(tostring(err), 2)
end

function Host:run_program(args)
    local path = self:_path(arg_string(args, "path"))
    if not fs.exists(path) and fs.exists(path .. ".lua") then path = path .. ".lua" end
    if not fs.exists(path) or fs.isDir(path) then
        fail("not_found", "no such program: " .. paths.display(self.root, path))
    end
    local argv = {}
    if type(args.args) == "table" then
        for i, a in ipairs(args.args) do argv[i] = tostring(a) end
    end
    local h = fs.open(path, "r")
    local code = h.readAll() or ""
    h.close()
    local env = self:_env("/" .. path, argv)
    local chunk, serr = load(code, "@/" .. path, "t", env)
    if not chunk then return { ok = false, output = "", error = tostring(serr) } end
    local ran, output, ok, err = capture.run(function()
        return xpcall(chunk, traceback, table.unpack(argv))
    end)
    -- ran: the capture itself worked; ok, err: what xpcall returned for the program
    if not ran then return { ok = false, output = output, error = tostring(ok) } end
    if ok == true then return { ok = true, output = output } end
    return failed_run({ ok = false, output = output }, tostring(err or "error"))
end

-- Built-ins -----------------------------------------------------------------------

function Host.computer_time()
    return {
        epoch_ms = os.epoch("utc"),
        -- in-game time of day (0-24) and day number; `clock` is seconds this computer has been on
        time = os.time(),
        day = os.day(),
        clock = os.clock(),
    }
end

function Host:computer_info()
    local kind = "computer"
    if turtle then kind = "turtle" elseif pocket then kind = "pocket" end
    local sides = json.array()
    if peripheral then
        for _, side in ipairs(peripheral.getNames()) do
            sides[#sides + 1] = { name = side, type = peripheral.getType(side) }
        end
    end
    local root = self:_path("")
    return {
        computer_id = os.getComputerID(),
        label = os.getComputerLabel(),
        kind = kind,
        os_version = os.version(),
        host = _G._HOST,
        colour = term.isColour(),
        free_space = fs.getFreeSpace(root == "" and "/" or root),
        root = root == "" and "/" or "/" .. root,
        tools_dir = self.registry.dir,
        peripherals = sides,
    }
end

-- Model-written tools -----------------------------------------------------------

local function tool_handler(spec, fn)
    return function(args, task_id, call_id)
        return fn(args, { task_id = task_id, call_id = call_id, name = spec.name, version = spec.version })
    end
end

--- Re-read the registry and (re)register the offered versions of the model-written tools.
-- A tool whose file is missing or broken is reported and skipped.
-- @treturn table `{loaded = {name...}, errors = {{name, error}...}}`
function Host:reload_tools()
    local problems = self.registry:load()
    local errors = json.array()
    for _, p in ipairs(problems) do errors[#errors + 1] = { name = "registry", error = p } end
    local offered = self.registry:offered()
    local keep, loaded = {}, json.array()
    for _, spec in ipairs(offered) do
        local fn, err = self.registry:load_function(spec, self:_env("/" .. self.registry:path(spec.file)))
        if fn then
            keep[spec.name] = true
            loaded[#loaded + 1] = spec.name
            self.client:register(spec.name, tool_handler(spec, fn), {
                description = spec.description ~= "" and spec.description or nil,
                args_schema = spec.args_schema,
            })
        else
            errors[#errors + 1] = { name = spec.name, error = err }
        end
    end
    for name in pairs(self.tool_names) do
        if not keep[name] then self.client:unregister(name) end
    end
    self.tool_names = keep
    self.problems = errors
    self.client:set_tools(self.registry:infos())
    return { loaded = loaded, errors = errors }
end

function Host:tool_create(args)
    local s, err = self.registry:create({
        name = args.name, code = args.code, description = args.description,
        args_schema = args.args_schema, fn = args.fn,
    })
    if not s then error(err, 0) end
    self:reload_tools()
    return s
end

function Host:tool_set_status(args)
    local s, err = self.registry:set_status(arg_string(args, "name"), arg_string(args, "status"))
    if not s then error(err, 0) end
    local report = self:reload_tools()
    s.reload_errors = report.errors
    return s
end

function Host:tool_test(args)
    local name = arg_string(args, "name")
    local e = self.registry.entries[name]
    if not e then fail("not_found", "no tool named '" .. name .. "'") end
    if e.status == "retired" then fail("invalid_transition", "'" .. name .. "' is retired") end
    local spec = { name = name, file = e.file, fn = e.fn, version = e.version }
    local fn, lerr = self.registry:load_function(spec, self:_env("/" .. self.registry:path(e.file)))
    if not fn then
        self.registry:record_test(name, false, lerr)
        self.client:set_tools(self.registry:infos())
        return { ok = false, version = e.version, status = e.status, output = "", error = lerr }
    end
    local targs = type(args.args) == "table" and args.args or json.object()
    local ran, output, ok, res = capture.run(function()
        return xpcall(fn, traceback, targs, { task_id = "tool_test", call_id = "tool_test", name = name,
            version = e.version })
    end)
    local passed = ran and ok == true
    local err = not passed and tostring(ran and res or ok) or nil
    self.registry:record_test(name, passed, err)
    self.client:set_tools(self.registry:infos())
    local r = { ok = passed, version = e.version, status = e.status, output = output,
        result = passed and res or nil }
    if err then failed_run(r, err) end
    return r
end

function Host:_register_core()
    local c = self.client
    local function reg(name, desc, schema, method)
        c:register(name, function(args) return method(self, args) end, { description = desc, args_schema = schema })
    end
    reg("shell_exec", "Run a CraftOS shell command line; returns ok (the program's success) and its terminal output.",
        obj({ command = STR }, { "command" }), Host.shell_exec)
    reg("fs_list", "List a directory: entries with name, is_dir, size.",
        obj({ path = STR }), Host.fs_list)
    reg("fs_read", "Read a file. Optional byte offset/length.",
        obj({ path = STR, offset = { type = "integer" }, length = { type = "integer" } }, { "path" }), Host.fs_read)
    reg("fs_write", "Write (or append to) a file, creating parent directories.",
        obj({ path = STR, content = STR, append = { type = "boolean" } }, { "path", "content" }), Host.fs_write)
    reg("fs_delete", "Delete a file or directory.", obj({ path = STR }, { "path" }), Host.fs_delete)
    reg("fs_move", "Move or rename a file or directory.",
        obj({ from = STR, to = STR, overwrite = { type = "boolean" } }, { "from", "to" }), Host.fs_move)
    reg("run_program", "Run a Lua program with arguments; returns ok, its output and the error with stack trace.",
        obj({ path = STR, args = { type = "array", items = STR } }, { "path" }), Host.run_program)
    reg("computer_time", "This computer's clocks: epoch_ms (real UTC), time (in-game hour 0-24), day (in-game "
        .. "day), clock (uptime s).", obj({}), Host.computer_time)
    reg("computer_info", "About this computer: id, label, kind (computer/turtle/pocket), CraftOS version, "
        .. "free disk space, the file root, the tools directory and attached peripherals.", obj({}),
        Host.computer_info)
    reg("tool_list", "List the model-written tools with their lifecycle status, and tools that failed to load.",
        obj({}), function(h) return { tools = h.registry:list(), problems = h.problems or json.array() } end)
    reg("tool_create",
        "Create a tool (or a new version) as a draft: code is Lua returning a function(args, ctx) or a table "
            .. "with that function under fn (default run).",
        obj({ name = STR, code = STR, description = STR, args_schema = { type = "object" }, fn = STR },
            { "name", "code" }), Host.tool_create)
    reg("tool_test", "Run a tool's newest version (draft/test/active) with args; a passing run allows activation.",
        obj({ name = STR, args = { type = "object" } }, { "name" }), Host.tool_test)
    reg("tool_set_status", "Move a tool through draft -> test -> active -> retired.",
        obj({ name = STR, status = { type = "string", enum = json.array({ "draft", "test", "active", "retired" }) } },
            { "name", "status" }), Host.tool_set_status)
    reg("tools_reload", "Re-read /tools/registry.json and re-register the active tools.", obj({}),
        Host.reload_tools)
end

return M
