--- The ccagent client: connects a CC:Tweaked computer to the ccagent orchestrator.
--
-- A client offers commands (tools) the orchestrator's models may call, creates
-- tasks, follows their progress and answers the models' questions. It speaks the
-- JSON-over-WebSocket protocol (version 1), survives disconnects (reconnect with
-- capped, jittered backoff; unacknowledged command results are re-sent) and
-- never runs the same call twice (repeated `call_id`s get the stored result).
--
-- Everything happens inside @{Client:run}, which only waits through
-- `os.pullEventRaw`, so it can share the computer with other code via
-- `parallel.waitForAny`. Command handlers run in their own coroutines and may
-- `sleep`, `os.pullEvent` or run programs without blocking the connection.
--
--     local ccagent = require "ccagent"
--     local client = ccagent.connect("ws://orchestrator:8080/ws")
--     client:register("turtle_forward", function(args)
--         return { moved = turtle.forward() }
--     end, { description = "Move forward one block" })
--     client:run()
--
-- @module ccagent
local expect_mod = require "cc.expect"
local json = require "ccagent.json"
local chunk = require "ccagent.chunk"
local version = require "ccagent.version"
local trace = require "ccagent.trace"

local expect, field = expect_mod.expect, expect_mod.field

local M = {}

--- The JSON module the client uses (@{ccagent.json}).
M.json = json

--- Client version string.
M.VERSION = version.client

--- Protocol version spoken.
M.PROTOCOL_VERSION = version.protocol

--- Frame limit used until the server's `welcome` says otherwise (CC:Tweaked's WebSocket limit).
M.DEFAULT_MAX_MESSAGE_BYTES = 131072

--- Command results kept for repeated call_ids (acknowledged ones are evicted first).
M.DEFAULT_RESULT_CACHE = 128

--- Ended tasks remembered (their `tasks` entry and final status); older ones are forgotten first.
M.DEFAULT_KEEP_ENDED = 256

local function now_ms()
    if os.epoch then return os.epoch("utc") end
    return math.floor(os.clock() * 1000)
end

--- Lua pattern of the ids the orchestrator accepts (client ids, and the request and chunk ids made from them):
-- ASCII letters, digits and `. _ - : @ +`, so the id prints as it is on an operator's terminal.
M.ID_PATTERN = "^[A-Za-z0-9%._:@%+%-]+$"

--- Longest client id the orchestrator accepts.
M.MAX_CLIENT_ID = 200

--- A client id made from any text (a computer label): each run of other characters becomes `-`, cut to
-- @{MAX_CLIENT_ID} characters.
-- @tparam string text
-- @treturn string|nil the id, nil when nothing of `text` is left
function M.safe_id(text)
    expect(1, text, "string")
    local id = text:gsub("[^A-Za-z0-9%._:@%+%-]+", "-"):sub(1, M.MAX_CLIENT_ID)
    if id == "" or id == "-" then return nil end
    return id
end

local function default_client_id()
    local label = os.getComputerLabel and os.getComputerLabel()
    local id = type(label) == "string" and M.safe_id(label)
    if id then return id end
    return "computer-" .. tostring(os.getComputerID and os.getComputerID() or 0)
end

local function queue(...)
    os.queueEvent(...)
end

--- A connection to the orchestrator. Create one with @{connect}.
-- @type Client
local Client = {}
Client.__index = Client

--- Create a client for `ws_url`. The socket is opened by @{Client:run} (or @{Client:open}).
-- @tparam string|{string...} ws_url the orchestrator's WebSocket URL (`ws://host:port/ws`), or several (a list, or
--   one string separated by commas) for orchestrators sharing one database: a lost or refused connection moves on
--   to the next URL at once, and the backoff applies after a whole round of them failed
-- @tparam[opt] table opts `client_id` (default: the computer label made into an id with @{safe_id}, else
--   `computer-<id>`; an explicit one must match @{ID_PATTERN}),
--   `token`, `headers`, `reconnect_min` / `reconnect_max` (seconds, default 1 / 30),
--   `connect_timeout` (seconds, default 20), `result_cache` (count, default 128),
--   `keep_ended` (count, default 256: ended tasks whose entry and final status are kept),
--   `state_dir` (a directory where unacknowledged results and the calls in progress are kept, so a
--   reboot — a chunk unload, a server restart — neither loses a result nor runs a call twice;
--   default none: memory only), `log` (function(level, message))
-- @treturn Client
function M.connect(ws_url, opts)
    expect(1, ws_url, "string", "table")
    expect(2, opts, "table", "nil")
    local urls = {}
    if type(ws_url) == "table" then
        for i, u in ipairs(ws_url) do
            if type(u) ~= "string" then
                error(("bad server URL #%d (string expected, got %s)"):format(i, type(u)), 2)
            end
            urls[#urls + 1] = u
        end
    else
        for u in ws_url:gmatch("[^,%s]+") do urls[#urls + 1] = u end
    end
    if #urls == 0 then error("bad argument #1 (no server URL)", 2) end
    opts = opts or {}
    field(opts, "client_id", "string", "nil")
    field(opts, "token", "string", "nil")
    field(opts, "headers", "table", "nil")
    field(opts, "reconnect_min", "number", "nil")
    field(opts, "reconnect_max", "number", "nil")
    field(opts, "connect_timeout", "number", "nil")
    field(opts, "result_cache", "number", "nil")
    field(opts, "keep_ended", "number", "nil")
    field(opts, "state_dir", "string", "nil")
    field(opts, "log", "function", "nil")
    if opts.client_id ~= nil and (not opts.client_id:find(M.ID_PATTERN) or #opts.client_id > M.MAX_CLIENT_ID) then
        error("bad field 'client_id' (use only ASCII letters, digits and . _ - : @ +, at most "
            .. M.MAX_CLIENT_ID .. " characters)", 2)
    end
    local self = setmetatable({
        url = urls[1],
        --- Every server URL, tried in turn (see @{connect}); `url` is the one in use.
        urls = urls,
        url_index = 1,
        client_id = opts.client_id or default_client_id(),
        token = opts.token,
        headers = opts.headers,
        reconnect_min = opts.reconnect_min or 1,
        reconnect_max = opts.reconnect_max or 30,
        connect_timeout = opts.connect_timeout or 20,
        result_cache = opts.result_cache or M.DEFAULT_RESULT_CACHE,
        keep_ended = math.max(1, math.floor(opts.keep_ended or M.DEFAULT_KEEP_ENDED)),
        log = opts.log or function() end,
        --- Connection state: `idle`, `connecting`, `open` (hello sent), `ready` (welcomed), `waiting`, `stopped`.
        state = "idle",
        attempt = 0,
        max_message_bytes = M.DEFAULT_MAX_MESSAGE_BYTES,
        heartbeat_ms = 0,
        commands = {},
        command_order = {},
        --- Tasks this client created or subscribed to, by task id: `{id, status, progress, message, result, error}`.
        tasks = {},
        -- Tasks whose end was announced, by task id → final status (see @{Client:_end}); `ended_order` lists
        -- them oldest first, so the oldest are forgotten past `keep_ended`.
        ended = {},
        ended_order = {},
        ended_head = 1,
        ended_tail = 0,
        --- Open questions by question id: `{task_id, question_id, question, why}`.
        questions = {},
        requests = {},
        subscriptions = {},
        outbox = {},
        results = {},
        result_order = {},
        running = {},
        counter = 0,
        reassembler = chunk.reassembler(),
        state_dir = opts.state_dir,
        -- Model-written tool registry snapshot (@{Client:set_tools}); nil when the client has none.
        tool_snapshot = nil,
        -- What changed since the last flush: `hello` (commands), `tools` (tool snapshot).
        dirty = {},
    }, Client)
    if self.state_dir then self:_load_state() end
    return self
end

function Client:_id(prefix)
    self.counter = self.counter + 1
    return ("%s-%s-%d-%d"):format(prefix, self.client_id, now_ms(), self.counter)
end

-- Sending -------------------------------------------------------------------

function Client:_send_text(text)
    local ws = self.ws
    if not ws then return false end
    local frames, err = chunk.split(text, self.max_message_bytes, self:_id("chunk"))
    if not frames then
        self.log("error", "cannot send message: " .. err)
        return false
    end
    for i = 1, #frames do
        local ok, serr = pcall(ws.send, frames[i])
        if not ok then
            self:_lost("send failed: " .. tostring(serr))
            return false
        end
    end
    return true
end

-- Send now when welcomed; otherwise keep it for the next connection.
function Client:_send(msg)
    local text = assert(json.encode(msg))
    if self.state == "ready" and self:_send_text(text) then return true end
    self.outbox[#self.outbox + 1] = text
    return false
end

--- Send `msg` now when welcomed, else drop it (for state resent whole on every connection, like the screen).
-- @tparam table msg
-- @treturn boolean whether it was sent
function Client:send_volatile(msg)
    if self.state ~= "ready" then return false end
    return self:_send_text(assert(json.encode(msg)))
end

function Client:_hello()
    local cmds = json.array()
    for _, name in ipairs(self.command_order) do
        local c = self.commands[name]
        cmds[#cmds + 1] = {
            name = name,
            description = c.description,
            args_schema = c.args_schema,
            timeout_ms = c.timeout_ms,
        }
    end
    return {
        type = "hello",
        client_id = self.client_id,
        token = self.token,
        protocol_version = version.protocol,
        client_version = version.client,
        commands = cmds,
        tools = self.tool_snapshot,
    }
end

-- Durable call state ------------------------------------------------------------
-- With `state_dir`, every call leaves `<id>.run` while it runs and `<id>.result` (the command_result frame)
-- until the server acknowledges it. Ids are percent-encoded, so file names cannot collide or escape the dir.

function Client:_state_file(call_id, ext)
    local safe = call_id:gsub("[^%w_%-]", function(c) return ("%%%02X"):format(c:byte()) end)
    return fs.combine(self.state_dir, safe .. ext)
end

local function write_file(path, text)
    local ok, h = pcall(fs.open, path, "w")
    if not ok or not h then return false end
    h.write(text)
    h.close()
    return true
end

local function read_file(path)
    local h = fs.open(path, "r")
    if not h then return nil end
    local text = h.readAll()
    h.close()
    return text
end

function Client:_persist(call_id, ext, text)
    if not self.state_dir then return end
    if not write_file(self:_state_file(call_id, ext), text) then
        self.log("warn", "cannot write call state for " .. call_id)
    end
end

function Client:_unpersist(call_id, ext)
    if not self.state_dir then return end
    local path = self:_state_file(call_id, ext)
    if fs.exists(path) then pcall(fs.delete, path) end
end

-- Restore unacknowledged results; a call that was running when the computer stopped is reported as
-- interrupted instead of being run again.
function Client:_load_state()
    if not fs.exists(self.state_dir) then fs.makeDir(self.state_dir) end
    local names = fs.list(self.state_dir)
    table.sort(names)
    for _, name in ipairs(names) do
        local path = fs.combine(self.state_dir, name)
        local text = read_file(path)
        local msg = text and json.decode(text)
        if type(msg) ~= "table" or type(msg.call_id) ~= "string" then
            self.log("warn", "ignored unreadable call state " .. path)
            pcall(fs.delete, path)
        elseif name:find("%.result$") then
            self:_store_result(msg.call_id, text, true)
        elseif name:find("%.run$") and not self.results[msg.call_id] then
            local result = assert(json.encode({
                type = "command_result", task_id = msg.task_id, call_id = msg.call_id, ok = false,
                error = { code = "interrupted",
                    message = "the computer stopped while this command was running; it may have run partly" },
            }))
            self:_store_result(msg.call_id, result)
            pcall(fs.delete, path)
        end
    end
end

-- Connection ------------------------------------------------------------------

--- Start connecting (non-blocking). @{Client:run} calls this itself.
function Client:open()
    if self.state == "connecting" or self.state == "open" or self.state == "ready" then return end
    self.state = "connecting"
    self.connect_timer = os.startTimer(self.connect_timeout)
    local ok, res, err = pcall(http.websocketAsync, self.url, self.headers)
    if not ok or res == false then
        self:_retry("cannot open websocket: " .. tostring(ok and err or res))
    end
end

function Client:_retry(reason)
    self.ws = nil
    if self.state == "stopped" then return end
    self.state = "waiting"
    self.attempt = self.attempt + 1
    local n = #self.urls
    local delay
    if n > 1 then
        -- Another orchestrator may be the active one now (failover): try the next URL, at once while this round
        -- has URLs left, with the backoff once every URL failed.
        self.url_index = self.url_index % n + 1
        self.url = self.urls[self.url_index]
    end
    if n > 1 and self.url_index ~= 1 then
        delay = 0.1
    else
        local round = math.ceil(self.attempt / n)
        delay = math.min(self.reconnect_max, self.reconnect_min * 2 ^ (round - 1))
    end
    -- Jitter spreads the reconnects of many computers after a server restart.
    delay = delay * (0.5 + math.random() * 0.5)
    self.retry_delay = delay
    self.retry_timer = os.startTimer(delay)
    self.log("warn", ("disconnected (%s); retrying in %.1fs"):format(tostring(reason), delay))
    queue("ccagent_connection", "disconnected", tostring(reason))
end

-- The socket is gone: forget partial chunks, schedule a reconnect. `already_closed`: the computer reported
-- websocket_closed, so the handle is dead and is not closed again (CraftOS-PC can abort in websocket_close on a
-- handle whose connection it already tore down; CC:Tweaked treats it as a no-op either way).
function Client:_lost(reason, already_closed)
    local ws = self.ws
    self.ws = nil
    if ws and not already_closed then pcall(ws.close) end
    self.reassembler:clear()
    self:_retry(reason)
end

function Client:_on_open(ws)
    self.ws = ws
    self.state = "open"
    self.last_rx = now_ms()
    self:_send_text(assert(json.encode(self:_hello())))
end

function Client:_on_welcome(msg)
    if msg.protocol_version ~= nil and not version.compatible(msg.protocol_version) then
        queue("ccagent_error", "protocol_version", "server speaks protocol " .. tostring(msg.protocol_version))
        self:stop()
        return
    end
    if self.state == "ready" then return end -- the answer to a re-sent hello: nothing to catch up
    if self.state ~= "open" then return end
    self.state = "ready"
    self.attempt = 0
    self.server_version = msg.server_version
    -- The orchestrator's server-side tools: a task's default allowed_commands includes them (see create_task).
    self.server_tools = type(msg.server_tools) == "table" and msg.server_tools or {}
    if type(msg.max_message_bytes) == "number" and msg.max_message_bytes >= 1024 then
        self.max_message_bytes = msg.max_message_bytes
    end
    -- Older servers do not say: results are then sent whole.
    if type(msg.max_tool_output_bytes) == "number" and msg.max_tool_output_bytes >= 1024 then
        self.max_result_bytes = msg.max_tool_output_bytes
    end
    self.heartbeat_ms = type(msg.heartbeat_ms) == "number" and msg.heartbeat_ms or 0
    -- What the server offers this computer's menus (older servers send neither).
    self.task_kinds = type(msg.task_kinds) == "table" and msg.task_kinds or nil
    self.models = type(msg.models) == "table" and msg.models or nil
    self.model_roles = type(msg.model_roles) == "table" and msg.model_roles or nil
    self:_screen_word(msg.screen)
    if self.heartbeat_ms > 0 then self.heartbeat_timer = os.startTimer(self.heartbeat_ms / 1000) end
    -- Unacknowledged results first: the server is waiting for them.
    for _, call_id in ipairs(self.result_order) do
        local r = self.results[call_id]
        if r and not r.acked and self.max_result_bytes and #r.text > self.max_result_bytes then
            -- Stored before this server said its limit (a reboot, another server): cut down now, stored again.
            local stored = json.decode(r.text)
            if type(stored) == "table" then
                self:_store_result(call_id, (M.fit_result(stored, self.max_result_bytes)))
            end
        end
        if r and not r.acked and not self:_send_text(self.results[call_id].text) then return end
    end
    if self.tool_snapshot then
        self.dirty.tools = nil
        if not self:_send_text(assert(json.encode({ type = "tools_update", tools = self.tool_snapshot }))) then
            return
        end
    end
    for task_id in pairs(self.subscriptions) do
        if not self:_send_text(assert(json.encode({ type = "subscribe", task_id = task_id }))) then return end
    end
    local pending = self.outbox
    self.outbox = {}
    for i = 1, #pending do
        -- an entry is the text, or a function building it now (create_task: see there)
        local text = pending[i]
        if type(text) == "function" then text = text() end
        if not self:_send_text(text) then
            for j = i, #pending do self.outbox[#self.outbox + 1] = pending[j] end
            return
        end
    end
    queue("ccagent_connection", "connected", self.server_version)
end

function Client:_on_heartbeat()
    if self.state ~= "ready" or self.heartbeat_ms <= 0 then return end
    local idle = now_ms() - (self.last_rx or 0)
    if idle > 3 * self.heartbeat_ms then
        self:_lost("no message from the server for " .. idle .. " ms")
        return
    end
    if idle >= self.heartbeat_ms then self:_send_text('{"type":"ping"}') end
    self.heartbeat_timer = os.startTimer(self.heartbeat_ms / 1000)
end

-- Commands ------------------------------------------------------------------

-- Mark something to re-announce; one `ccagent_flush` event makes @{Client:handle_event} send it once, so
-- registering many commands in a row costs one `hello`.
function Client:_changed(what)
    if self.dirty[what] then return end
    local pending = next(self.dirty) ~= nil
    self.dirty[what] = true
    if not pending then queue("ccagent_flush") end
end

function Client:_flush()
    if not next(self.dirty) then return end
    local dirty = self.dirty
    self.dirty = {}
    -- Offline: the next connection's hello carries everything.
    if self.state ~= "open" and self.state ~= "ready" then return end
    if dirty.hello then self:_send_text(assert(json.encode(self:_hello()))) end
    if dirty.tools then
        if self.state == "ready" then
            self:_send_text(assert(json.encode({ type = "tools_update", tools = self.tool_snapshot })))
        else
            self.dirty.tools = true -- welcome pending: @{_on_welcome} sends it
        end
    end
end

--- Announce the model-written tool registry (a full snapshot, see the protocol's `tools_update`).
-- Sent in every `hello`, after every welcome, and (once per batch of changes) whenever it changes.
-- @tparam {table...} tools entries `{name, status, version, description, file, updated_at}`
function Client:set_tools(tools)
    expect(1, tools, "table")
    local list = json.array()
    for i, t in ipairs(tools) do list[i] = t end
    self.tool_snapshot = list
    self:_changed("tools")
end

--- Offer a command to the orchestrator. Re-sends `hello` when already connected.
-- @tparam string name the command name models call
-- @tparam function handler `handler(args, task_id, call_id)` returning a JSON-able result;
--   raising an error (a string, or a table `{code=, message=}`) reports a failed call
-- @tparam[opt] table opts `description`, `args_schema` (JSON Schema object), `timeout_ms`
function Client:register(name, handler, opts)
    expect(1, name, "string")
    expect(2, handler, "function")
    expect(3, opts, "table", "nil")
    opts = opts or {}
    field(opts, "description", "string", "nil")
    field(opts, "args_schema", "table", "nil")
    field(opts, "timeout_ms", "number", "nil")
    -- The orchestrator refuses a hello naming a command outside the id charset: say so here, where it is made.
    if not name:find(M.ID_PATTERN) or #name > 256 then
        error("bad argument #1 (command name: use only ASCII letters, digits and . _ - : @ +)", 2)
    end
    if not self.commands[name] then self.command_order[#self.command_order + 1] = name end
    self.commands[name] = {
        handler = handler,
        description = opts.description,
        args_schema = opts.args_schema,
        timeout_ms = opts.timeout_ms,
    }
    self:_changed("hello")
end

--- Withdraw a command. Re-sends `hello` when connected.
-- @tparam string name
function Client:unregister(name)
    expect(1, name, "string")
    if not self.commands[name] then return end
    self.commands[name] = nil
    for i = #self.command_order, 1, -1 do
        if self.command_order[i] == name then table.remove(self.command_order, i) end
    end
    self:_changed("hello")
end

--- Names of the registered commands, in registration order.
-- @treturn {string...}
function Client:command_names()
    local names = json.array()
    for i, n in ipairs(self.command_order) do names[i] = n end
    return names
end

local function traceback(err)
    if type(err) == "table" then
        return {
            code = type(err.code) == "string" and err.code or "command_error",
            message = tostring(err.message or err.code or "error"),
            traceback = err.traceback,
        }
    end
    local tb = debug and debug.traceback and debug.traceback(tostring(err), 2) or nil
    if not tb then return { code = "runtime_error", message = tostring(err) } end
    -- The model reads the trace without the client's own frames; the whole one stays in the step log.
    local trimmed, removed = trace.trim(tb)
    return { code = "runtime_error", message = tostring(err), traceback = trimmed,
        host_traceback = removed and tb or nil }
end

function Client:_store_result(call_id, text, loaded)
    if not self.results[call_id] then self.result_order[#self.result_order + 1] = call_id end
    self.results[call_id] = { text = text, acked = false }
    if not loaded then
        self:_persist(call_id, ".result", text)
        self:_unpersist(call_id, ".run")
    end
    -- Bound the cache: drop acknowledged results first, oldest first.
    local i = 1
    while #self.result_order > self.result_cache and i <= #self.result_order do
        local id = self.result_order[i]
        if self.results[id].acked then
            self.results[id] = nil
            table.remove(self.result_order, i)
            self:_unpersist(id, ".result")
        else
            i = i + 1
        end
    end
    while #self.result_order > self.result_cache do
        local id = table.remove(self.result_order, 1)
        self.results[id] = nil
        self:_unpersist(id, ".result")
        self.log("warn", "result cache full: dropped unacknowledged result " .. id)
    end
end

-- Results over the server's limit -------------------------------------------
-- The server takes a command_result up to `max_tool_output_bytes` (its welcome says how many); a larger one fails
-- its call with `output_too_large` and the model gets nothing of it. So a result over the limit is cut down here
-- first: its longest strings are shortened, each ending with a note of what was cut, and an object result gets
-- `truncated = true`. The model reads what fits and knows the rest is missing.

local CUT_NOTE = "\n[... %d bytes cut: the result was %d bytes, the server takes at most %d]"
-- Room kept for the notes and the `truncated` field, per string cut.
local NOTE_ROOM = 128

local function strings_in(t, out, depth)
    if depth > 64 then return end
    for k, v in pairs(t) do
        if type(v) == "string" then out[#out + 1] = { t = t, k = k, n = #v }
        elseif type(v) == "table" and v ~= json.null then strings_in(v, out, depth + 1) end
    end
end

--- The JSON text of a `command_result` within `limit` bytes: the message itself when it fits; else the message with
-- its result's (or error's) longest strings cut down and marked; else, when strings cannot make it fit (a huge array
-- of numbers), a failed result with error code `output_too_large`.
-- @tparam table msg the command_result message
-- @tparam number limit the server's `max_tool_output_bytes`
-- @treturn string the JSON text to send
-- @treturn boolean whether it was cut
function M.fit_result(msg, limit)
    local text = assert(json.encode(msg))
    if #text <= limit then return text, false end
    local original = #text
    local key = msg.ok and "result" or "error"
    -- A box, so a bare string result is cut like a nested one.
    local box = { v = msg[key] }
    local found = {}
    strings_in(box, found, 0)
    table.sort(found, function(a, b) return a.n > b.n end)
    for _, s in ipairs(found) do
        s.str = s.t[s.k]
        -- Escapes make the JSON longer than the string (é is 2 bytes, 6 escaped): cut in proportion.
        s.ratio = s.n / math.max(1, #json.encode(s.str) - 2)
    end
    local need = original - limit
    for _ = 1, 6 do
        local excess = need
        for _, s in ipairs(found) do
            if excess <= 0 then
                s.t[s.k] = s.str
            else
                local keep = math.max(0, s.n - math.ceil((excess + NOTE_ROOM) * s.ratio))
                -- Never in the middle of a UTF-8 sequence.
                while keep > 0 do
                    local b = s.str:byte(keep + 1)
                    if b and b >= 0x80 and b <= 0xBF then keep = keep - 1 else break end
                end
                s.t[s.k] = s.str:sub(1, keep) .. CUT_NOTE:format(s.n - keep, original, limit)
                excess = excess - math.floor((s.n - keep) / s.ratio) + NOTE_ROOM
            end
        end
        local v = box.v
        if type(v) == "table" and not json.is_array(v) and v.truncated == nil then v.truncated = true end
        msg[key] = v
        text = assert(json.encode(msg))
        if #text <= limit then return text, true end
        -- Still over (the cut part had more escapes than the rest): cut that much more, from the whole strings.
        need = need + (#text - limit) + NOTE_ROOM
    end
    return assert(json.encode({
        type = "command_result", task_id = msg.task_id, call_id = msg.call_id, ok = false,
        error = { code = "output_too_large",
            message = ("the result was %d bytes; the server takes at most %d, and it could not be cut down"):format(
                original, limit) },
    })), true
end

function Client:_finish(call_id, task_id, ok, value)
    local entry = self.running[call_id]
    self.running[call_id] = nil
    if entry and entry.timer then os.cancelTimer(entry.timer) end
    local msg = { type = "command_result", task_id = task_id, call_id = call_id, ok = ok }
    if ok then
        if value == nil then value = json.object() end
        msg.result = value
    else
        msg.error = value
    end
    local text, err = json.encode(msg)
    if not text then
        text = assert(json.encode({
            type = "command_result", task_id = task_id, call_id = call_id, ok = false,
            error = { code = "invalid_result", message = "result is not JSON: " .. err },
        }))
    elseif self.max_result_bytes and #text > self.max_result_bytes then
        local size = #text
        text = M.fit_result(msg, self.max_result_bytes)
        self.log("warn", ("result of %s cut from %d to %d bytes (the server's limit)"):format(call_id, size, #text))
    end
    self:_store_result(call_id, text)
    if self.state == "ready" then
        -- What the command changed (commands registered, the tool registry) goes out before its result: the
        -- server's next step may call a tool this command just activated.
        self:_flush()
        self:_send_text(text)
    end
    queue("ccagent_command", call_id, ok)
end

function Client:_resume(call_id, entry, ...)
    local ok, a, b = coroutine.resume(entry.co, ...)
    if not self.running[call_id] then return end -- finished meanwhile (timeout)
    if entry.cancelled then
        -- Cancelled: whatever the handler did with the terminate, the answer is the cancellation, sent once. A
        -- handler that swallowed the terminate (os.pullEventRaw) is never resumed again, so nothing of it runs on.
        self:_finish(call_id, entry.task_id, false, { code = "cancelled", message = entry.cancelled })
    elseif not ok then
        self:_finish(call_id, entry.task_id, false, traceback(a))
    elseif coroutine.status(entry.co) == "dead" then
        if a then self:_finish(call_id, entry.task_id, true, b) else self:_finish(call_id, entry.task_id, false, b) end
    else
        entry.filter = a
    end
end

function Client:_on_command_call(msg)
    local call_id, task_id, name = msg.call_id, msg.task_id, msg.command
    if type(call_id) ~= "string" or type(task_id) ~= "string" or type(name) ~= "string" then
        self.log("warn", "ignored a command_call without call_id/task_id/command")
        return
    end
    local stored = self.results[call_id]
    if stored then
        -- A repeated call: answer with what the first run produced.
        stored.acked = false
        self:_send_text(stored.text)
        return
    end
    if self.running[call_id] then return end
    local cmd = self.commands[name]
    if not cmd then
        self:_finish(call_id, task_id, false, { code = "not_found", message = "unknown command: " .. name })
        return
    end
    local args = msg.args
    if type(args) ~= "table" then args = json.object() end
    local handler = cmd.handler
    local co = coroutine.create(function()
        return xpcall(handler, traceback, args, task_id, call_id)
    end)
    local entry = { co = co, task_id = task_id }
    self:_persist(call_id, ".run", assert(json.encode({ call_id = call_id, task_id = task_id, command = name })))
    local timeout = msg.timeout_ms or cmd.timeout_ms
    if type(timeout) == "number" and timeout > 0 then entry.timer = os.startTimer(timeout / 1000) end
    self.running[call_id] = entry
    self:_resume(call_id, entry)
end

-- Incoming messages ---------------------------------------------------------

function Client:_task(task_id)
    local t = self.tasks[task_id]
    if not t then
        t = { id = task_id }
        self.tasks[task_id] = t
    end
    return t
end

--- The server's word on this computer's screen mirror (`welcome.screen`, `screen_switch`): true, false or nil (no
-- opinion), kept in `screen_server`; a `ccagent_screen_switch` event tells the mirror (see @{ccagent.screen}).
function Client:_screen_word(value)
    if value ~= true and value ~= false then value = nil end
    self.screen_server = value
    queue("ccagent_screen_switch", tostring(value))
end

local handlers = {}

function handlers.welcome(self, msg) self:_on_welcome(msg) end

function handlers.ping(self, msg)
    self:_send_text(assert(json.encode({ type = "pong", id = msg.id })))
end

function handlers.pong() end

function handlers.screen_switch(self, msg) self:_screen_word(msg.screen) end

function handlers.command_call(self, msg) self:_on_command_call(msg) end

-- The server stopped waiting for a call (its task was cancelled or failed, or it timed out): stop the handler as
-- CC's own `terminate` would stop a program — the coroutine is resumed once with a `terminate` event (os.pullEvent
-- raises "Terminated" in it, so `run_program`, `shell_exec` and tools unwind and restore the terminal) — and answer
-- once with a `cancelled` error. Unknown or finished calls are ignored.
function handlers.command_cancel(self, msg)
    local call_id = msg.call_id
    local entry = type(call_id) == "string" and self.running[call_id]
    if not entry then return end
    entry.cancelled = type(msg.reason) == "string" and msg.reason ~= "" and msg.reason or "cancelled"
    self.log("info", "cancelling call " .. call_id .. ": " .. entry.cancelled)
    self:_resume(call_id, entry, "terminate")
    queue("ccagent_cancelled", call_id, entry.cancelled)
end

function handlers.command_ack(self, msg)
    local r = type(msg.call_id) == "string" and self.results[msg.call_id]
    if r then
        r.acked = true
        self:_unpersist(msg.call_id, ".result")
    end
end

function handlers.task_created(self, msg)
    if type(msg.task_id) ~= "string" then return end
    local req = self.requests[msg.request_id]
    self.requests[msg.request_id or ""] = nil
    local t = self:_task(msg.task_id)
    if self:_ended(msg.task_id) then
        -- A repeated reply for a task whose end was already announced: it neither moves it back nor is
        -- announced again (a still-pending request just learns its id and final status).
        if req and req.on_created then
            local ok, err = pcall(req.on_created, msg.task_id, t.status)
            if not ok then queue("ccagent_error", "callback", tostring(err)) end
        end
        return
    end
    t.status = msg.status or "queued"
    t.request_id = msg.request_id
    if req then
        t.kind, t.prompt = req.kind, req.prompt
        self.subscriptions[msg.task_id] = true
        if req.on_created then
            local ok, err = pcall(req.on_created, msg.task_id, t.status)
            if not ok then queue("ccagent_error", "callback", tostring(err)) end
        end
    end
    queue("ccagent_task", msg.task_id, t.status, t)
end

local TERMINAL = { completed = true, failed = true, cancelled = true }
-- Ends announced by their own message (task_completed / task_failed carry the result or error).
local WITH_OUTCOME = { completed = true, failed = true }

-- The end of a task is final (the orchestrator never revives a finished task), and it reaches a client more than
-- once: a returning client is replayed the current state of its tasks (`task_update` + `task_completed`/
-- `task_failed`), a subscribe is answered with it, and a live event may cross a replayed one. Once the end is
-- announced, later messages about the task change nothing and announce nothing.
function Client:_ended(task_id)
    return self.ended[task_id] ~= nil
end

-- A long-running program sees thousands of tasks end: only the newest `keep_ended` are remembered (their
-- `tasks` entry and final status). The server replays only what changed since the client went away, so an ended
-- task old enough to be forgotten is not replayed again.
function Client:_end(task_id, status)
    if self.ended[task_id] == nil then
        -- `ended_order[ended_head .. ended_tail]` holds the remembered ends, oldest first (explicit bounds: the
        -- length operator is not reliable on a table with holes at the front).
        local order = self.ended_order
        self.ended_tail = self.ended_tail + 1
        order[self.ended_tail] = task_id
        while self.ended_tail - self.ended_head + 1 > self.keep_ended do
            local old = order[self.ended_head]
            order[self.ended_head] = nil
            self.ended_head = self.ended_head + 1
            self.ended[old] = nil
            self.tasks[old] = nil
        end
    end
    self.ended[task_id] = status
    self.subscriptions[task_id] = nil
end

function handlers.task_update(self, msg)
    if type(msg.task_id) ~= "string" then return end
    if self:_ended(msg.task_id) then return end
    local t = self:_task(msg.task_id)
    if type(msg.delta) == "string" then
        -- A chat task's reply as the model writes it: the text since the previous delta. `t.reply` holds the text
        -- so far (until the task ends: then `t.result.message` has all of it).
        t.status = msg.status or t.status
        t.reply = (t.reply or "") .. msg.delta
        queue("ccagent_delta", msg.task_id, msg.delta, t)
        return
    end
    if WITH_OUTCOME[msg.status] and t.status ~= msg.status then
        -- The server follows this with task_completed/task_failed. Announcing the end now would let a program
        -- read `tasks[id].result` (or `.error`) before it has arrived.
        if msg.progress ~= nil then t.progress = msg.progress end
        if msg.message ~= nil then t.message = msg.message end
        return
    end
    t.status = msg.status or t.status
    if TERMINAL[t.status] then self:_end(msg.task_id, t.status) end
    if msg.progress ~= nil then t.progress = msg.progress end
    if msg.message ~= nil then t.message = msg.message end
    queue("ccagent_task", msg.task_id, t.status, t)
end

function handlers.task_completed(self, msg)
    if type(msg.task_id) ~= "string" then return end
    if self:_ended(msg.task_id) then return end
    local t = self:_task(msg.task_id)
    t.status, t.result, t.progress = "completed", msg.result, 1
    self:_end(msg.task_id, "completed")
    queue("ccagent_task", msg.task_id, "completed", t)
end

function handlers.task_failed(self, msg)
    if type(msg.task_id) ~= "string" then return end
    if self:_ended(msg.task_id) then return end
    local t = self:_task(msg.task_id)
    t.status, t.error = "failed", msg.error
    self:_end(msg.task_id, "failed")
    queue("ccagent_task", msg.task_id, "failed", t)
end

function handlers.ask_user(self, msg)
    if type(msg.task_id) ~= "string" or type(msg.question_id) ~= "string" then return end
    if self:_ended(msg.task_id) then return end -- a stale question of a finished task
    -- After a reconnect the server repeats open questions (and the subscribe reply repeats them again): a
    -- question still open here was already announced, so programs hear of it once.
    local open = self.questions[msg.question_id]
    if open and open.task_id == msg.task_id then return end
    self.questions[msg.question_id] = {
        task_id = msg.task_id, question_id = msg.question_id, question = msg.question, why = msg.why,
    }
    local t = self:_task(msg.task_id)
    t.status = "waiting_for_user"
    queue("ccagent_question", msg.task_id, msg.question_id, msg.question, msg.why)
end

function handlers.error(self, msg)
    local req = msg.request_id and self.requests[msg.request_id]
    if req then
        self.requests[msg.request_id] = nil
        if req.on_created then
            local ok, err = pcall(req.on_created, nil, msg.code, msg.message)
            if not ok then queue("ccagent_error", "callback", tostring(err)) end
        end
    end
    local stored = msg.code == "unknown_call" and type(msg.call_id) == "string" and self.results[msg.call_id]
    if stored and not stored.acked then
        -- The server has closed this call (cancelled, timed out, or it never knew it): it will not take the
        -- result, so stop re-sending it after every reconnect and drop it from disk. It stays in the bounded
        -- cache, first to be evicted, so a repeated command_call still gets it instead of a second run.
        stored.acked = true
        self:_unpersist(msg.call_id, ".result")
    end
    if self.state == "open" and (msg.code == "unauthorized" or msg.code == "protocol_version") then
        -- Retrying soon will not fix a wrong token: keep trying, but at the slowest pace.
        self.attempt = math.max(self.attempt, 64)
    end
    self.log("warn", ("server error %s: %s"):format(tostring(msg.code), tostring(msg.message)))
    queue("ccagent_error", msg.code, msg.message, msg)
end

function handlers.chunk(self, msg)
    local text, err = self.reassembler:add(msg)
    if err then
        -- Clients have no `error` message in the protocol: the server's call times out and is re-sent.
        self.log("warn", err)
        queue("ccagent_error", "chunk_error", err)
    elseif text then
        self:_on_text(text, true)
    end
end

function Client:_on_text(text, reassembled)
    self.last_rx = now_ms()
    local msg, err = json.decode(text)
    if type(msg) ~= "table" or type(msg.type) ~= "string" then
        self.log("warn", "ignored a frame that is not a message: " .. tostring(err or text:sub(1, 80)))
        return
    end
    if reassembled and msg.type == "chunk" then return end
    local h = handlers[msg.type]
    if h then h(self, msg) else self.log("debug", "ignored message type " .. msg.type) end
end

--- Feed one event to the client. @{Client:run} calls this for every event; call it yourself
-- only when driving your own event loop.
-- @param ... the event as returned by `os.pullEventRaw`
function Client:handle_event(...)
    local ev, a, b = ...
    -- Handler coroutines waiting before this event (new ones must not see it).
    local waiting = {}
    for id, entry in pairs(self.running) do waiting[#waiting + 1] = { id, entry } end

    if ev == "websocket_success" and a == self.url then
        if self.state == "connecting" then self:_on_open(b) else pcall(b.close) end
    elseif ev == "websocket_failure" and a == self.url and self.state == "connecting" then
        self:_retry(b)
    elseif ev == "websocket_closed" and a == self.url and (self.state == "open" or self.state == "ready") then
        self:_lost(b or "closed by the server", true)
    elseif ev == "websocket_message" and a == self.url and self.ws then
        self:_on_text(b, false)
    elseif ev == "timer" then
        if a == self.retry_timer and self.state == "waiting" then
            self:open()
        elseif a == self.connect_timer and self.state == "connecting" then
            self:_retry("connect timeout")
        elseif a == self.heartbeat_timer then
            self:_on_heartbeat()
        else
            for call_id, entry in pairs(self.running) do
                if entry.timer == a then
                    self:_finish(call_id, entry.task_id, false, { code = "timeout", message = "command timed out" })
                    break
                end
            end
        end
    end

    for i = 1, #waiting do
        local id, entry = waiting[i][1], waiting[i][2]
        if self.running[id] == entry and (entry.filter == nil or entry.filter == ev) and ev ~= "terminate" then
            self:_resume(id, entry, ...)
        end
    end
    self:_flush()
end

--- Run the client until @{Client:stop} (or terminate). Safe inside `parallel.waitForAny`.
function Client:run()
    if self.state == "stopped" then self.state = "idle" end
    if self.state == "idle" then self:open() end
    while self.state ~= "stopped" do
        local ev = table.pack(os.pullEventRaw())
        if ev[1] == "terminate" then
            self:stop()
            error("Terminated", 0)
        end
        self:handle_event(table.unpack(ev, 1, ev.n))
    end
end

--- Close the connection and make @{Client:run} return.
function Client:stop()
    self.state = "stopped"
    local ws = self.ws
    self.ws = nil
    if ws then pcall(ws.close) end
    queue("ccagent_stop")
end

--- Whether the server has welcomed this connection.
-- @treturn boolean
function Client:is_connected()
    return self.state == "ready"
end

-- Tasks -----------------------------------------------------------------------

--- Per-task settings @{Client:create_task} passes on, with the type each must have (the server checks the
-- values against the operator's maximums and refuses more with `invalid_field`).
M.TASK_SETTINGS = {
    models = "table", provider = "string", temperature = "number", num_ctx = "number", executor_mode = "string",
    budgets = "table", interactive = "boolean", completion = "table",
}

--- Ask the orchestrator to start a task.
-- @tparam table opts `prompt` (string), `kind` (string, default "general_agent"), `context` (any JSON),
--   `allowed_commands` (list of names; default every registered command and the server's tools), `client_id`
--   (where the commands run; default this client; another computer of this one's group with `server.groups`),
--   `settings` (per-task settings, see @{TASK_SETTINGS}: `{models = {native = "qwen3:8b"}, temperature = 0.2,
--   budgets = {max_steps = 20}}`), `name` (a name for the task, e.g. "farm-watcher": triggers and
--   @{Client:agent_event} reach it by that name), `trigger` (the name of the in-game trigger that starts it:
--   rate-limited by the server), `on_created` (function(task_id, status), or (nil, code, message) when refused)
-- @treturn string the generated request_id
function Client:create_task(opts)
    expect(1, opts, "table")
    field(opts, "prompt", "string")
    field(opts, "kind", "string", "nil")
    field(opts, "allowed_commands", "table", "nil")
    field(opts, "client_id", "string", "nil")
    field(opts, "settings", "table", "nil")
    field(opts, "name", "string", "nil")
    field(opts, "trigger", "string", "nil")
    field(opts, "on_created", "function", "nil")
    if opts.settings then
        for k, v in pairs(opts.settings) do
            local want = M.TASK_SETTINGS[k]
            if not want then error(("bad setting '%s' (known: %s)"):format(tostring(k),
                "models, provider, temperature, num_ctx, executor_mode, budgets, interactive, completion"), 2) end
            if type(v) ~= want then error(("bad setting '%s' (%s expected, got %s)"):format(k, want, type(v)), 2) end
        end
    end
    local request_id = self:_id("req")
    self.requests[request_id] = {
        kind = opts.kind or "general_agent", prompt = opts.prompt, on_created = opts.on_created,
    }
    -- Built when sent: the server's tools (in its welcome) are only known once connected.
    local function message()
        local allowed = json.array()
        for i, n in ipairs(opts.allowed_commands or self.command_order) do allowed[i] = n end
        if not opts.allowed_commands then
            for _, n in ipairs(self.server_tools or {}) do
                if type(n) == "string" then allowed[#allowed + 1] = n end
            end
        end
        return {
            type = "create_task",
            request_id = request_id,
            task_kind = opts.kind or "general_agent",
            client_id = opts.client_id or self.client_id,
            prompt = opts.prompt,
            context = opts.context,
            allowed_commands = allowed,
            settings = opts.settings,
            name = opts.name,
            trigger = opts.trigger,
        }
    end
    if self.state == "ready" then
        self:_send(message())
    else
        self.outbox[#self.outbox + 1] = function() return assert(json.encode(message())) end
    end
    return request_id
end

--- Follow a task's updates (also re-sent after every reconnect).
-- @tparam string task_id
function Client:subscribe(task_id)
    expect(1, task_id, "string")
    self.subscriptions[task_id] = true
    self:_task(task_id)
    self:_send({ type = "subscribe", task_id = task_id, request_id = self:_id("req") })
end

--- Stop following a task.
-- @tparam string task_id
function Client:unsubscribe(task_id)
    expect(1, task_id, "string")
    self.subscriptions[task_id] = nil
    self:_send({ type = "unsubscribe", task_id = task_id })
end

--- Cancel a task.
-- @tparam string task_id
function Client:cancel(task_id)
    expect(1, task_id, "string")
    self:_send({ type = "cancel_task", task_id = task_id, request_id = self:_id("req") })
end

--- Send a follow-up message to a task. A running task sees it in its next model step; a finished one is
-- continued with it (same task and memory, fresh budgets). The task's next `task_update` tells what happened.
-- @tparam string task_id
-- @tparam string text
-- @treturn string the generated request_id
function Client:message(task_id, text)
    expect(1, task_id, "string")
    expect(2, text, "string")
    local request_id = self:_id("req")
    self.subscriptions[task_id] = true
    self:_task(task_id)
    if self.ended[task_id] then
        -- A message continues an ended task: its next updates are news again.
        self.ended[task_id] = nil
    end
    self:_send({ type = "task_message", task_id = task_id, text = text, request_id = request_id })
    return request_id
end

--- Push an event into a task (a redstone change, an inventory snapshot, a game state update). The task sees it
-- in its history; a task waiting for an event or a timer wakes up.
-- @tparam string task_id
-- @tparam string name event name
-- @param[opt] data any JSON-able value
-- @tparam[opt] string trigger the name of the in-game trigger sending it (the server rate-limits each trigger)
-- @treturn string the generated request_id
function Client:event(task_id, name, data, trigger)
    expect(1, task_id, "string")
    expect(2, name, "string")
    expect(4, trigger, "string", "nil")
    local request_id = self:_id("req")
    self:_send({ type = "task_event", task_id = task_id, name = name, data = data, request_id = request_id,
        trigger = trigger })
    return request_id
end

--- Push an event into a running task named by the name it was created with (`create_task{name = ...}`), or by its
-- id. The server resolves the name among the running tasks this computer may act on; an unknown name is an
-- `error` `not_found`, a name several running tasks share is `invalid_field` (the message lists them).
-- @tparam string agent the task's name (or id)
-- @tparam string name event name
-- @param[opt] data any JSON-able value
-- @tparam[opt] string trigger the name of the in-game trigger sending it
-- @treturn string the generated request_id
function Client:agent_event(agent, name, data, trigger)
    expect(1, agent, "string")
    expect(2, name, "string")
    expect(4, trigger, "string", "nil")
    local request_id = self:_id("req")
    self:_send({ type = "task_event", agent = agent, name = name, data = data, request_id = request_id,
        trigger = trigger })
    return request_id
end

--- Answer a model's question (from a `ccagent_question` event).
-- Accepts `(task_id, question_id, text)` or `(question_id, text)`.
-- @tparam string task_id
-- @tparam string question_id
-- @tparam string text
function Client:answer(task_id, question_id, text)
    if text == nil and self.questions[task_id] then
        task_id, question_id, text = self.questions[task_id].task_id, task_id, question_id
    end
    expect(1, task_id, "string")
    expect(2, question_id, "string")
    expect(3, text, "string")
    self.questions[question_id] = nil
    self:_send({ type = "user_answer", task_id = task_id, question_id = question_id, text = text })
end

return M
