--- Model-written tools: the registry in `/tools/registry.json` and their lifecycle.
--
-- Each tool is a Lua file under the tools directory returning either a function
-- or a table holding the function named by `fn` (default `run`). The function is
-- called as `fn(args, ctx)` with `ctx = {task_id, call_id, name, version}` and
-- returns a JSON-able result (or raises an error).
--
-- Lifecycle: `draft` → `test` → `active` → `retired`.
--
-- * Only `active` tools are offered to tasks. While a new version of an active
--   tool is in draft/test, the previous active version keeps being offered.
-- * `draft` and `test` versions run only through @{Registry:run_test}; running a
--   draft moves it to `test`; `test` → `active` needs a passing test of that
--   very version.
-- * Every replaced version is copied to `archive/<name>.v<version>.lua` first;
--   retiring moves the file there. Nothing is ever deleted.
--
-- Registry file: a JSON object `name → {file, fn, description, args_schema,
-- status, version, history, previous?, last_test?}` (file paths relative to the
-- tools directory).
--
-- @module ccagent.tools
local json = require "ccagent.json"

local M = {}

--- The lifecycle states.
M.STATUSES = { draft = true, test = true, active = true, retired = true }

-- from → to → requirement
local transitions = {
    draft = { test = true, retired = true },
    test = { draft = true, active = "tested", retired = true },
    active = { retired = true },
    retired = {},
}

--- Whether `entry` may move to `to`.
-- @tparam table entry a registry entry (needs `status`, `version`, `last_test`)
-- @tparam string to the wanted status
-- @treturn[1] true
-- @treturn[2] false
-- @treturn[2] string why not
function M.can_transition(entry, to)
    if not M.STATUSES[to] then return false, "unknown status '" .. tostring(to) .. "'" end
    local from = entry.status
    local rule = transitions[from] and transitions[from][to]
    if not rule then
        return false, ("cannot move a tool from %s to %s (lifecycle: draft -> test -> active -> retired)"):format(
            tostring(from), to)
    end
    if rule == "tested" then
        local lt = entry.last_test
        if not (lt and lt.ok == true and lt.version == entry.version) then
            return false, ("version %d has no passing tool_test yet"):format(entry.version or 0)
        end
    end
    return true
end

--- Whether `name` is a valid tool name (`[a-z_][a-z0-9_]*`, at most 64 characters).
-- @tparam string name
-- @treturn boolean
function M.valid_name(name)
    return type(name) == "string" and #name <= 64 and name:find("^[%l_][%l%d_]*$") ~= nil
end

local function validate_entry(name, e)
    if not M.valid_name(name) then return "invalid tool name" end
    if type(e) ~= "table" then return "entry is not an object" end
    if type(e.file) ~= "string" or e.file == "" then return "missing file" end
    if not M.STATUSES[e.status] then return "unknown status '" .. tostring(e.status) .. "'" end
    if e.fn ~= nil and type(e.fn) ~= "string" then return "fn must be a string" end
    if e.description ~= nil and type(e.description) ~= "string" then return "description must be a string" end
    if e.args_schema ~= nil and type(e.args_schema) ~= "table" then return "args_schema must be an object" end
    if type(e.version) ~= "number" or e.version < 1 then return "version must be a positive number" end
    return nil
end

--- Parse registry JSON text. Invalid entries are reported and skipped.
-- @tparam string text
-- @treturn table entries by name
-- @treturn {string...} problems found (empty when clean)
function M.parse(text)
    local problems = {}
    local data, err = json.decode(text)
    if type(data) ~= "table" or json.is_array(data) and #data > 0 then
        problems[1] = "registry is not a JSON object: " .. tostring(err or "wrong type")
        return {}, problems
    end
    local entries = {}
    for name, e in pairs(data) do
        local why = validate_entry(name, e)
        if why then
            problems[#problems + 1] = ("tool '%s': %s"):format(tostring(name), why)
        else
            if type(e.history) ~= "table" then e.history = json.array() end
            entries[name] = e
        end
    end
    return entries, problems
end

--- An open registry. Create with @{open}.
-- @type Registry
local Registry = {}
Registry.__index = Registry

--- Open the registry in `dir`.
-- @tparam table opts `dir` (default "/tools"), `fs` (default the global fs), `now` (ms clock)
-- @treturn Registry
function M.open(opts)
    opts = opts or {}
    local self = setmetatable({
        fs = opts.fs or fs,
        dir = opts.dir or "/tools",
        now = opts.now or function() return os.epoch and os.epoch("utc") or 0 end,
        entries = {},
        problems = {},
    }, Registry)
    return self
end

function Registry:path(rel) return self.fs.combine(self.dir, rel) end

function Registry:_read(path)
    local h = self.fs.open(path, "r")
    if not h then return nil end
    local s = h.readAll() or ""
    h.close()
    return s
end

function Registry:_write(path, text)
    local dir = self.fs.getDir(path)
    if dir ~= "" and not self.fs.exists(dir) then self.fs.makeDir(dir) end
    local h, err = self.fs.open(path, "w")
    if not h then error({ code = "io_error", message = "cannot write " .. path .. ": " .. tostring(err) }, 0) end
    h.write(text)
    h.close()
end

--- (Re)read the registry file. A corrupt file is kept as `registry.json.corrupt` and reported.
-- @treturn {string...} problems (also kept in `self.problems`)
function Registry:load()
    local file = self:path("registry.json")
    local text = self.fs.exists(file) and self:_read(file)
    if not text then
        self.entries, self.problems = {}, {}
        return self.problems
    end
    self.entries, self.problems = M.parse(text)
    if not next(self.entries) and #self.problems > 0 and self.problems[1]:find("not a JSON object") then
        local backup = file .. ".corrupt"
        if self.fs.exists(backup) then self.fs.delete(backup) end
        self.fs.copy(file, backup)
        self.problems[1] = self.problems[1] .. " (kept as " .. backup .. ")"
    end
    return self.problems
end

--- Write the registry file (via a temporary file, so a crash leaves the old or new file).
function Registry:save()
    local file = self:path("registry.json")
    local text = assert(json.encode(json.object(self.entries)))
    local tmp = file .. ".tmp"
    self:_write(tmp, text)
    if self.fs.exists(file) then self.fs.delete(file) end
    self.fs.move(tmp, file)
end

function Registry:_archive(name, entry, move)
    local rel = ("archive/%s.v%d.lua"):format(name, entry.version)
    local src, dst = self:path(entry.file), self:path(rel)
    if src == dst then return rel end
    if self.fs.exists(dst) then self.fs.delete(dst) end
    if self.fs.exists(src) then
        if not self.fs.exists(self.fs.getDir(dst)) then self.fs.makeDir(self.fs.getDir(dst)) end
        if move then self.fs.move(src, dst) else self.fs.copy(src, dst) end
    end
    return rel
end

local function summary(name, e)
    return {
        name = name, status = e.status, version = e.version, description = e.description,
        file = e.file, offered_version = e.status == "active" and e.version or (e.previous and e.previous.version),
        last_test = e.last_test,
    }
end

--- Create a tool, or a new version of it (status `draft`). The replaced version is archived first.
-- @tparam table spec `name`, `code` (Lua source), `description`, `args_schema`, `fn` (default "run")
-- @treturn[1] table the tool's summary
-- @treturn[2] nil
-- @treturn[2] table `{code, message}`
function Registry:create(spec)
    local name = spec.name
    if not M.valid_name(name) then
        return nil, { code = "invalid_args", message = "name must match [a-z_][a-z0-9_]* (max 64)" }
    end
    if self.reserved and self.reserved[name] then
        return nil, { code = "forbidden", message = "'" .. name .. "' is a built-in command" }
    end
    if type(spec.code) ~= "string" or spec.code == "" then
        return nil, { code = "invalid_args", message = "code must be a non-empty string of Lua" }
    end
    if spec.args_schema ~= nil and (type(spec.args_schema) ~= "table" or json.is_array(spec.args_schema)) then
        return nil, { code = "invalid_args", message = "args_schema must be an object" }
    end
    if spec.description ~= nil and type(spec.description) ~= "string" then
        return nil, { code = "invalid_args", message = "description must be a string" }
    end
    if spec.fn ~= nil and (type(spec.fn) ~= "string" or not spec.fn:find("^[%a_][%w_]*$")) then
        return nil, { code = "invalid_args", message = "fn must be the name of a function in the tool's table" }
    end
    local old = self.entries[name]
    local now = self.now()
    local e = {
        file = name .. ".lua",
        fn = spec.fn or "run",
        description = spec.description or (old and old.description) or "",
        args_schema = spec.args_schema or (old and old.args_schema) or json.object(),
        status = "draft",
        version = 1,
        history = json.array(),
        created_at = now,
        changed_at = now,
    }
    if old then
        e.version = old.version + 1
        e.history = old.history or json.array()
        local archived = self:_archive(name, old, false)
        e.history[#e.history + 1] = { version = old.version, status = old.status, file = archived, at = now }
        if old.status == "active" then
            -- Keep serving the active version until the new one is activated.
            e.previous = {
                version = old.version, file = archived, fn = old.fn,
                description = old.description, args_schema = old.args_schema,
            }
        elseif old.previous and old.status ~= "retired" then
            e.previous = old.previous
        end
    end
    self:_write(self:path(e.file), spec.code)
    self.entries[name] = e
    self:save()
    return summary(name, e)
end

--- Move a tool to another lifecycle status (see @{can_transition}).
-- @tparam string name
-- @tparam string status
-- @treturn[1] table the tool's summary
-- @treturn[2] nil
-- @treturn[2] table `{code, message}`
function Registry:set_status(name, status)
    local e = self.entries[name]
    if not e then return nil, { code = "not_found", message = "no tool named '" .. tostring(name) .. "'" } end
    local ok, why = M.can_transition(e, status)
    if not ok then return nil, { code = "invalid_transition", message = why } end
    local now = self.now()
    if status == "active" then
        e.previous = nil
    elseif status == "retired" then
        local was = e.status
        e.file = self:_archive(name, e, true)
        e.previous = nil
        e.history[#e.history + 1] = { version = e.version, status = was, file = e.file, at = now, retired = true }
    end
    e.status = status
    e.changed_at = now
    self:save()
    return summary(name, e)
end

--- Summaries of every tool, sorted by name.
-- @treturn {table...}
function Registry:list()
    local names = {}
    for n in pairs(self.entries) do names[#names + 1] = n end
    table.sort(names)
    local out = json.array()
    for i, n in ipairs(names) do out[i] = summary(n, self.entries[n]) end
    return out
end

--- The registry as the protocol's tool list (`tools_update.tools`): one entry per tool with its newest
-- version's status (a draft of an active tool shows as `draft` while the active version is still offered).
-- @treturn {table...} `{name, status, version, description, file, updated_at}` sorted by name
function Registry:infos()
    local names = {}
    for n in pairs(self.entries) do names[#names + 1] = n end
    table.sort(names)
    local out = json.array()
    for i, n in ipairs(names) do
        local e = self.entries[n]
        out[i] = {
            name = n,
            status = e.status,
            version = e.version,
            description = type(e.description) == "string" and e.description ~= "" and e.description or nil,
            file = "/" .. self:path(e.file),
            updated_at = e.changed_at or e.created_at,
        }
    end
    return out
end

--- The versions to offer to tasks: `{name, file, fn, description, args_schema, version}` per tool.
-- @treturn {table...}
function Registry:offered()
    local out = {}
    for _, s in ipairs(self:list()) do
        local e = self.entries[s.name]
        if e.status == "active" then
            out[#out + 1] = { name = s.name, file = e.file, fn = e.fn, description = e.description,
                args_schema = e.args_schema, version = e.version }
        elseif (e.status == "draft" or e.status == "test") and e.previous then
            local p = e.previous
            out[#out + 1] = { name = s.name, file = p.file, fn = p.fn, description = p.description,
                args_schema = p.args_schema, version = p.version }
        end
    end
    return out
end

--- Load a tool version's function. Syntax and load errors are returned, never raised.
-- @tparam table spec `{name, file, fn}` (as from @{offered})
-- @tparam[opt] table env the environment for the tool's chunk (default a fresh one over _G)
-- @treturn[1] function the tool function
-- @treturn[2] nil
-- @treturn[2] string why it cannot be loaded
function Registry:load_function(spec, env)
    local path = self:path(spec.file)
    local code = self.fs.exists(path) and self:_read(path)
    if not code then return nil, "file not found: " .. path end
    env = env or setmetatable({}, { __index = _G })
    local chunk, err = load(code, "@" .. path, "t", env)
    if not chunk then return nil, "syntax error: " .. tostring(err) end
    local ok, mod = pcall(chunk)
    if not ok then return nil, "error while loading: " .. tostring(mod) end
    if type(mod) == "function" then return mod end
    local fname = spec.fn or "run"
    if type(mod) == "table" and type(mod[fname]) == "function" then return mod[fname] end
    return nil, ("the file must return a function or a table with function '%s'"):format(fname)
end

--- Record the outcome of a `tool_test` run of the current version; a draft moves to `test`.
-- @tparam string name
-- @tparam boolean ok
-- @tparam[opt] string err
function Registry:record_test(name, ok, err)
    local e = self.entries[name]
    if not e then return end
    local now = self.now()
    e.last_test = { version = e.version, ok = ok, at = now, error = err }
    if e.status == "draft" then
        e.status = "test"
        e.changed_at = now
    end
    self:save()
end

return M
