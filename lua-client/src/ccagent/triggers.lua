--- In-game triggers: CC events a player configures, forwarded to the orchestrator.
--
-- The triggers file (`/.ccagent/triggers.lua`) is a Lua file returning a list of triggers. Each one watches one
-- kind of event (`on`) and either posts it as an event into a running agent task (`agent = "<its name>"`: the name
-- it was created with, resolved by the server among the running tasks this computer may act on; a task id works
-- too) or starts a new task from a template (`task = {prompt = ..., kind = ..., settings = ...}`):
--
--     return {
--         { name = "crops", on = "redstone", side = "back", debounce = 2, agent = "farm-watcher" },
--         { name = "gate", on = "rednet", protocol = "farm", task = { prompt = "Open the gate for the visitor." } },
--     }
--
-- Kinds (`on`): `redstone` (an input changed: `side` to watch one, else every side; data `{side, on, level}`),
-- `peripheral` / `peripheral_detach` (data `{side, type}`), `rednet` (a message on `protocol`; data
-- `{sender, message, protocol}`), `monitor_touch` (`monitor` to watch one; data `{monitor, x, y}`), `timer`
-- (`every` seconds; data `{at}`), `chat` (a chat-box peripheral's `chat` event; `pattern` filters the message;
-- data `{player, message}`). `when = function(data) … end` filters further (return true to send).
--
-- Debouncing (`debounce`, seconds; default 1 for redstone, 0.5 for monitor_touch, 0 otherwise): an event starts a
-- quiet period and only the last event of the burst is sent at its end; for redstone the inputs are read again
-- then and nothing is sent when they are back where they were last sent, so a flickering line sends nothing or one
-- change. The server limits each trigger as well (`server.triggerRateLimit`).
--
-- @module ccagent.triggers
local json = require "ccagent.json"

local M = {}

--- Where the triggers file lives.
M.PATH = "/.ccagent/triggers.lua"

--- The kinds of event a trigger may watch, with the CC event each listens to.
M.KINDS = {
    redstone = "redstone", peripheral = "peripheral", peripheral_detach = "peripheral_detach",
    rednet = "rednet_message", monitor_touch = "monitor_touch", timer = "timer", chat = "chat",
}

local DEFAULT_DEBOUNCE = { redstone = 1, monitor_touch = 0.5 }

local SIDES = { "top", "bottom", "left", "right", "front", "back" }

local function bad(i, name, why)
    return ("trigger #%d%s: %s"):format(i, name and (" (" .. tostring(name) .. ")") or "", why)
end

--- Check one trigger definition and fill in its defaults.
-- @tparam table t the definition
-- @tparam number i its position in the list (for messages)
-- @treturn[1] table the trigger
-- @treturn[2] nil
-- @treturn[2] string what is wrong
function M.check(t, i)
    if type(t) ~= "table" then return nil, bad(i, nil, "not a table") end
    local name = t.name
    if type(name) ~= "string" or not name:find("^[A-Za-z0-9%._:@%+%-]+$") or #name > 100 then
        return nil, bad(i, name, "name must be letters, digits and . _ - : @ + (at most 100)")
    end
    if not M.KINDS[t.on] then
        return nil, bad(i, name, "on must be one of redstone, peripheral, peripheral_detach, rednet, "
            .. "monitor_touch, timer, chat")
    end
    if (t.agent == nil) == (t.task == nil) then
        return nil, bad(i, name, "give either agent (a task name or id) or task (a template)")
    end
    if t.agent ~= nil and (type(t.agent) ~= "string" or t.agent == "") then
        return nil, bad(i, name, "agent must be a task name or id")
    end
    if t.task ~= nil then
        if type(t.task) ~= "table" or type(t.task.prompt) ~= "string" or t.task.prompt == "" then
            return nil, bad(i, name, "task must be a table with a prompt")
        end
        for _, k in ipairs({ "kind", "client_id" }) do
            if t.task[k] ~= nil and type(t.task[k]) ~= "string" then
                return nil, bad(i, name, "task." .. k .. " must be a string")
            end
        end
        if t.task.settings ~= nil and type(t.task.settings) ~= "table" then
            return nil, bad(i, name, "task.settings must be a table")
        end
    end
    if t.on == "timer" and (type(t.every) ~= "number" or t.every < 1) then
        return nil, bad(i, name, "a timer needs every (seconds, at least 1)")
    end
    if t.on == "rednet" and type(t.protocol) ~= "string" then
        return nil, bad(i, name, "a rednet trigger needs protocol")
    end
    if t.side ~= nil and type(t.side) ~= "string" then return nil, bad(i, name, "side must be a string") end
    if t.monitor ~= nil and type(t.monitor) ~= "string" then
        return nil, bad(i, name, "monitor must be a string")
    end
    if t.pattern ~= nil and type(t.pattern) ~= "string" then
        return nil, bad(i, name, "pattern must be a string")
    end
    if t.when ~= nil and type(t.when) ~= "function" then return nil, bad(i, name, "when must be a function") end
    if t.event ~= nil and (type(t.event) ~= "string" or not t.event:find("^[A-Za-z0-9%._:@%+%-]+$")) then
        return nil, bad(i, name, "event must be a name (letters, digits and . _ - : @ +)")
    end
    local debounce = t.debounce
    if debounce == nil then debounce = DEFAULT_DEBOUNCE[t.on] or 0 end
    if type(debounce) ~= "number" or debounce < 0 then
        return nil, bad(i, name, "debounce must be a number of seconds")
    end
    local out = {}
    for k, v in pairs(t) do out[k] = v end
    out.debounce = debounce
    out.event = t.event or t.on
    return out
end

--- Read a list of trigger definitions (a table) into triggers. Bad ones are reported and skipped; two with the
-- same name are an error for the second.
-- @tparam table list
-- @treturn {table...} the triggers
-- @treturn {string...} problems
function M.from_list(list)
    local out, problems, seen = {}, {}, {}
    if type(list) ~= "table" then return out, { "the triggers file must return a list of triggers" } end
    for i, t in ipairs(list) do
        local checked, err = M.check(t, i)
        if checked and seen[checked.name] then
            checked, err = nil, bad(i, checked.name, "a trigger of that name comes earlier")
        end
        if checked then
            seen[checked.name] = true
            out[#out + 1] = checked
        else
            problems[#problems + 1] = err
        end
    end
    return out, problems
end

--- Load the triggers file. A missing file is no triggers.
-- @tparam[opt] string path (default @{PATH})
-- @treturn {table...} the triggers
-- @treturn {string...} problems (a file that does not run is one problem and no triggers)
function M.load(path)
    path = path or M.PATH
    if not fs.exists(path) then return {}, {} end
    local h = fs.open(path, "r")
    if not h then return {}, { "cannot open " .. path } end
    local text = h.readAll() or ""
    h.close()
    local env = setmetatable({}, { __index = _G })
    local chunk, err = load(text, "@" .. path, "t", env)
    if not chunk then return {}, { tostring(err) } end
    local ok, list = pcall(chunk)
    if not ok then return {}, { tostring(list) } end
    return M.from_list(list)
end

--- One line describing a trigger (what `ccagent triggers` prints).
-- @tparam table t a checked trigger
-- @treturn string
function M.describe(t)
    local what = t.on
    if t.side then what = what .. " " .. t.side end
    if t.monitor then what = what .. " " .. t.monitor end
    if t.protocol then what = what .. " protocol " .. t.protocol end
    if t.every then what = what .. " every " .. t.every .. "s" end
    if t.pattern then what = what .. " matching " .. t.pattern end
    local to = t.agent and ("event '" .. t.event .. "' to agent " .. t.agent)
        or ("new " .. (t.task.kind or "task") .. ": " .. t.task.prompt)
    local debounce = t.debounce > 0 and (" (debounce " .. t.debounce .. "s)") or ""
    return ("%s: %s -> %s%s"):format(t.name, what, to, debounce)
end

--- A running set of triggers. Create with @{new}.
-- @type Watcher
local Watcher = {}
Watcher.__index = Watcher

--- Watch `triggers` for `client`.
-- @tparam table client a @{ccagent.Client} (its `event` and `create_task` are used)
-- @tparam {table...} triggers checked triggers (@{load}, @{from_list})
-- @tparam[opt] table opts `redstone` (the redstone API; default the global), `log` (function(level, message))
-- @treturn Watcher
function M.new(client, triggers, opts)
    opts = opts or {}
    local self = setmetatable({
        client = client,
        triggers = triggers,
        redstone = opts.redstone or rawget(_G, "redstone"),
        log = opts.log or function() end,
        -- trigger name → {timer, data} of a quiet period running
        pending = {},
        -- timer id → trigger (quiet periods and `every` timers)
        timers = {},
        -- trigger name → the redstone inputs last sent (side → level)
        last_inputs = {},
        --- How many events each trigger sent (name → count).
        sent = {},
    }, Watcher)
    for _, t in ipairs(triggers) do
        self.sent[t.name] = 0
        if t.on == "redstone" then self.last_inputs[t.name] = self:_inputs(t) end
        if t.on == "timer" then self.timers[os.startTimer(t.every)] = { trigger = t, every = true } end
    end
    return self
end

function Watcher:_inputs(t)
    local rs = self.redstone
    local out = {}
    if not rs then return out end
    for _, side in ipairs(t.side and { t.side } or SIDES) do
        out[side] = rs.getAnalogInput and rs.getAnalogInput(side) or (rs.getInput(side) and 15 or 0)
    end
    return out
end

-- The data an event carries for trigger `t`, or nil when `t` does not take it.
local function match(t, ev, a, b, c, d)
    if ev ~= M.KINDS[t.on] then return nil end
    if t.on == "redstone" then
        return {}
    elseif t.on == "peripheral" or t.on == "peripheral_detach" then
        if t.side and a ~= t.side then return nil end
        local typ = ev == "peripheral" and peripheral and peripheral.getType and peripheral.getType(a) or nil
        return { side = a, type = typ }
    elseif t.on == "rednet" then
        if c ~= t.protocol then return nil end
        return { sender = a, message = b, protocol = c }
    elseif t.on == "monitor_touch" then
        if t.monitor and a ~= t.monitor then return nil end
        return { monitor = a, x = b, y = c }
    elseif t.on == "chat" then
        if type(b) ~= "string" or (t.pattern and not b:find(t.pattern)) then return nil end
        return { player = a, message = b, hidden = d == true or nil }
    end
    return nil
end

-- Send `data` for trigger `t` now (after its `when` filter).
function Watcher:_fire(t, data)
    if t.on == "redstone" then
        local now = self:_inputs(t)
        local before = self.last_inputs[t.name] or {}
        local changed
        for side, level in pairs(now) do
            if before[side] ~= level then
                changed = changed or {}
                changed[#changed + 1] = { side = side, on = level > 0, level = level }
            end
        end
        self.last_inputs[t.name] = now
        if not changed then return false end -- back where it was: a flicker, nothing to tell
        table.sort(changed, function(x, y) return x.side < y.side end)
        data = changed[1]
        if #changed > 1 then data = { side = changed[1].side, on = changed[1].on, level = changed[1].level,
            changes = json.array(changed) } end
    end
    if t.when then
        local ok, want = pcall(t.when, data)
        if not ok then
            self.log("warn", ("trigger %s: when failed: %s"):format(t.name, tostring(want)))
            return false
        end
        if not want then return false end
    end
    self.sent[t.name] = self.sent[t.name] + 1
    if t.agent then
        self.client:agent_event(t.agent, t.event, data, t.name)
    else
        local tpl = t.task
        self.client:create_task({
            prompt = tpl.prompt .. "\n\nTrigger " .. t.name .. " (" .. t.on .. "): " .. (json.encode(data) or "{}"),
            kind = tpl.kind,
            client_id = tpl.client_id,
            settings = tpl.settings,
            context = { trigger = t.name, event = t.event, data = data },
            trigger = t.name,
        })
    end
    os.queueEvent("ccagent_trigger", t.name, data)
    return true
end

--- Feed one event (as returned by `os.pullEvent`). @{Watcher:run} calls it for every event.
-- @param ... the event
function Watcher:handle_event(ev, a, b, c, d)
    if ev == "timer" then
        local entry = self.timers[a]
        if not entry then return end
        self.timers[a] = nil
        local t = entry.trigger
        if entry.every then
            self.timers[os.startTimer(t.every)] = { trigger = t, every = true }
            self:_fire(t, { at = os.epoch and os.epoch("utc") or 0 })
        else
            local p = self.pending[t.name]
            self.pending[t.name] = nil
            if p then self:_fire(t, p.data) end
        end
        return
    end
    for _, t in ipairs(self.triggers) do
        local data = match(t, ev, a, b, c, d)
        if data then
            if t.debounce > 0 then
                local p = self.pending[t.name]
                if p then
                    -- still bouncing: the quiet period starts again and the newest event wins
                    os.cancelTimer(p.timer)
                    self.timers[p.timer] = nil
                end
                local id = os.startTimer(t.debounce)
                self.pending[t.name] = { timer = id, data = data }
                self.timers[id] = { trigger = t }
            else
                self:_fire(t, data)
            end
        end
    end
end

--- Watch until the program stops (run it beside the client with `parallel.waitForAny`).
function Watcher:run()
    while true do
        self:handle_event(os.pullEvent())
    end
end

return M
