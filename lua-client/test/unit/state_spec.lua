-- Durable call state (connect{state_dir=...}): what keeps a reboot (chunk unload, server restart) from losing an
-- unacknowledged result or running a call twice. Uses the in-memory fs stand-in as the global `fs`.
local t = require "helper"
local stubs = require "stubs"
local memfs = require "memfs"
local json = require "ccagent.json"
local ccagent = require "ccagent"

local URL = "ws://127.0.0.1:1/ws"
local DIR = "/.ccagent/state"

local function frame(msg) return assert(json.encode(msg)) end

local function of_type(ws, typ)
    local out = {}
    for _, text in ipairs(ws.sent) do
        local m = assert(json.decode(text))
        if m.type == typ then out[#out + 1] = m end
    end
    return out
end

local function boot(disk)
    fs = disk
    local c = ccagent.connect(URL, { client_id = "st", state_dir = DIR })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", client_id = "st", server_version = "1",
        protocol_version = 1, heartbeat_ms = 1000, max_message_bytes = 131072 }))
    return c, ws
end

local function call(c, call_id, command, args)
    c:handle_event("websocket_message", URL, frame({ type = "command_call", task_id = "T", call_id = call_id,
        command = command, args = args or json.object() }))
end

local function state_files(disk)
    local out = {}
    for _, n in ipairs(disk.list(DIR)) do out[#out + 1] = n end
    table.sort(out)
    return table.concat(out, ",")
end

t.test("a result stays on disk until the server acknowledges it", function()
    stubs.reset()
    local disk = memfs.new()
    local c = boot(disk)
    c:register("id", function(a) return a end)
    call(c, "c1", "id", { v = 1 })
    t.eq(state_files(disk), "c1.result")
    c:handle_event("websocket_message", URL, frame({ type = "command_ack", task_id = "T", call_id = "c1" }))
    t.eq(state_files(disk), "")
end)

t.test("after a reboot the unacked result is re-sent and a repeated call_id is not run again", function()
    stubs.reset()
    local disk = memfs.new()
    local runs = 0
    local c1 = boot(disk)
    c1:register("append", function() runs = runs + 1 return { runs = runs } end)
    call(c1, "c2", "append")
    t.eq(runs, 1)
    -- reboot: a fresh client over the same disk
    local c2, ws2 = boot(disk)
    c2:register("append", function() runs = runs + 1 return { runs = runs } end)
    local resent = of_type(ws2, "command_result")
    t.eq(#resent, 1, "re-sent after the welcome")
    t.eq(resent[1].call_id, "c2")
    call(c2, "c2", "append")
    t.eq(runs, 1, "not run twice")
    t.eq(of_type(ws2, "command_result")[2].result.runs, 1)
end)

t.test("a call cut off by a reboot is reported as interrupted, never re-run", function()
    stubs.reset()
    local disk = memfs.new()
    local runs = 0
    local c1 = boot(disk)
    c1:register("slow", function() runs = runs + 1 os.pullEvent("never") end)
    call(c1, "c3", "slow")
    t.eq(state_files(disk), "c3.run")
    local c2, ws2 = boot(disk)
    c2:register("slow", function() runs = runs + 1 end)
    local r = of_type(ws2, "command_result")[1]
    t.eq(r.call_id, "c3")
    t.eq(r.ok, false)
    t.eq(r.error.code, "interrupted")
    call(c2, "c3", "slow")
    t.eq(runs, 1, "the repeated call is answered from the stored failure")
    t.eq(state_files(disk), "c3.result")
end)

t.test("call ids are encoded into safe file names (no collisions, no escaping the dir)", function()
    stubs.reset()
    local disk = memfs.new()
    local c = boot(disk)
    c:register("id", function(a) return a end)
    call(c, "../x/y", "id")
    call(c, "a b", "id")
    t.eq(state_files(disk), "%2E%2E%2Fx%2Fy.result,a%20b.result")
    local c2, ws2 = boot(disk)
    t.truthy(c2.results["../x/y"], "loaded back under the original id")
    t.eq(#of_type(ws2, "command_result"), 2)
end)

t.test("an unreadable state file is dropped with a warning, not a crash", function()
    stubs.reset()
    local disk = memfs.new()
    disk.makeDir(DIR)
    disk.files[".ccagent/state/bad.result"] = "{truncated"
    local warned
    fs = disk
    local c = ccagent.connect(URL, { client_id = "st", state_dir = DIR,
        log = function(level, msg) if level == "warn" then warned = msg end end })
    t.eq(next(c.results), nil)
    t.truthy(warned and warned:find("unreadable"), warned)
    t.eq(disk.files[".ccagent/state/bad.result"], nil)
end)

t.test("unknown_call for a stored result stops its re-sending (memory and disk) but never re-runs the call", function()
    -- guards: a result the server has closed (cancelled task, timed-out call) was re-sent after every reconnect
    -- and every reboot, forever, each time refused with unknown_call
    stubs.reset()
    local disk = memfs.new()
    local runs = 0
    local c1, ws1 = boot(disk)
    c1:register("append", function() runs = runs + 1 return { runs = runs } end)
    call(c1, "gone", "append")
    call(c1, "open", "append")
    t.eq(state_files(disk), "gone.result,open.result")
    c1:handle_event("websocket_message", URL, frame({ type = "error", code = "unknown_call",
        message = "call gone is already closed (cancelled)", call_id = "gone", task_id = "T" }))
    t.eq(state_files(disk), "open.result", "dropped from disk")
    t.eq(#stubs.events_named("ccagent_error"), 1, "still reported to programs")
    -- reconnect: only the other unacknowledged result is re-sent
    c1:handle_event("websocket_closed", URL, "restart")
    c1:handle_event("timer", c1.retry_timer)
    local ws2 = stubs.socket()
    c1:handle_event("websocket_success", URL, ws2)
    c1:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    local resent = of_type(ws2, "command_result")
    t.eq(#resent, 1)
    t.eq(resent[1].call_id, "open")
    -- a repeated command_call for it still gets the stored result instead of a second run
    call(c1, "gone", "append")
    t.eq(runs, 2)
    t.eq(of_type(ws2, "command_result")[2].call_id, "gone")
    t.eq(#ws1.sent > 0, true)
    -- reboot: nothing about it comes back from disk
    local c3, ws3 = boot(disk)
    c3:register("append", function() runs = runs + 1 return { runs = runs } end)
    local after_reboot = of_type(ws3, "command_result")
    t.eq(#after_reboot, 1)
    t.eq(after_reboot[1].call_id, "open")
end)

t.test("unknown_call for a call id the client does not hold changes nothing", function()
    stubs.reset()
    local disk = memfs.new()
    local c = boot(disk)
    c:register("id", function(a) return a end)
    call(c, "kept", "id")
    c:handle_event("websocket_message", URL, frame({ type = "error", code = "unknown_call", message = "x",
        call_id = "other", task_id = "T" }))
    c:handle_event("websocket_message", URL, frame({ type = "error", code = "forbidden", message = "x",
        call_id = "kept", task_id = "T" }))
    t.eq(state_files(disk), "kept.result")
    t.eq(c.results.kept.acked, false)
end)

t.done()
