-- The client's protocol state machine, driven event by event with stubbed os/http (no real socket here;
-- the CraftOS tier runs the same code against a real WebSocket server).
local t = require "helper"
local stubs = require "stubs"
local json = require "ccagent.json"
local ccagent = require "ccagent"

local URL = "ws://127.0.0.1:1/ws"

local function decoded(ws, from)
    local out = {}
    for i = from or 1, #ws.sent do out[#out + 1] = assert(json.decode(ws.sent[i])) end
    return out
end

local function of_type(ws, typ)
    local out = {}
    for _, m in ipairs(decoded(ws)) do
        if m.type == typ then out[#out + 1] = m end
    end
    return out
end

local function frame(msg) return assert(json.encode(msg)) end

-- A client that is connected and welcomed, with its fake socket.
local function ready_client(opts)
    stubs.reset()
    local c = ccagent.connect(URL, opts or { client_id = "turtle-1" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", client_id = c.client_id,
        server_version = "1.0.0", protocol_version = 1, heartbeat_ms = 0, max_message_bytes = 131072 }))
    return c, ws
end

local function call(c, call_id, command, args)
    c:handle_event("websocket_message", URL, frame({ type = "command_call", task_id = "task-1",
        call_id = call_id, command = command, args = args or json.object() }))
end

t.test("the server's word on the screen mirror: welcome.screen, then screen_switch, each told as an event", function()
    local c = ready_client()
    t.eq(c.screen_server, nil, "a welcome without screen is no word")
    stubs.reset()
    c:handle_event("websocket_message", URL, frame({ type = "screen_switch", screen = true }))
    t.eq(c.screen_server, true)
    c:handle_event("websocket_message", URL, frame({ type = "screen_switch", screen = false }))
    t.eq(c.screen_server, false)
    c:handle_event("websocket_message", URL, '{"type":"screen_switch","screen":null}')
    t.eq(c.screen_server, nil)
    c:handle_event("websocket_message", URL, frame({ type = "screen_switch", screen = "yes" }))
    t.eq(c.screen_server, nil, "anything but a boolean is no word")
    t.eq(#stubs.events_named("ccagent_screen_switch"), 4)
    stubs.reset()
    local c2 = ccagent.connect(URL, { client_id = "turtle-2" })
    c2:open()
    c2:handle_event("websocket_success", URL, stubs.socket())
    c2:handle_event("websocket_message", URL, frame({ type = "welcome", client_id = "turtle-2",
        server_version = "1.0.0", protocol_version = 1, heartbeat_ms = 0, max_message_bytes = 131072,
        screen = false }))
    t.eq(c2.screen_server, false)
    t.eq(#stubs.events_named("ccagent_screen_switch"), 1)
end)

t.test("client_id defaults to the label, else computer-<id>", function()
    stubs.label = nil
    t.eq(ccagent.connect(URL).client_id, "computer-7")
    stubs.label = "miner"
    t.eq(ccagent.connect(URL).client_id, "miner")
    stubs.label = nil
end)

t.test("a label becomes a printable id; an explicit id outside the charset is refused " ..
    "(guards: hello refused, ids obeyed by a terminal)", function()
    stubs.label = "My Turtle\27[31m!"
    t.eq(ccagent.connect(URL).client_id, "My-Turtle-31m-")
    stubs.label = " \r\n"
    t.eq(ccagent.connect(URL).client_id, "computer-7")
    stubs.label = ("x"):rep(300)
    t.eq(#ccagent.connect(URL).client_id, 200)
    stubs.label = nil
    t.eq(ccagent.safe_id("pc-1.a:b@c+d_e"), "pc-1.a:b@c+d_e")
    t.eq(ccagent.safe_id("K\195\188che"), "K-che")
    t.raises(function() ccagent.connect(URL, { client_id = "a b" }) end, "use only ASCII letters")
    t.raises(function() ccagent.connect(URL, { client_id = "pc\27]0;x\7" }) end, "bad field 'client_id'")
    local c = ccagent.connect(URL, { client_id = "pc-1" })
    t.raises(function() c:register("dig here", function() end) end, "command name: use only ASCII")
    for _, id in ipairs({ c:_id("req"), c:_id("chunk") }) do t.truthy(id:find(ccagent.ID_PATTERN), id) end
end)

t.test("connect checks its arguments like CC's expect", function()
    t.raises(function() ccagent.connect(42) end, "bad argument #1")
    t.raises(function() ccagent.connect(URL, { client_id = 5 }) end, "bad field 'client_id'")
end)

t.test("hello carries client id, protocol version and every command with its schema", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "a", token = "s3cret" })
    c:register("echo", function(args) return args end,
        { description = "Echo", args_schema = { type = "object", properties = {} }, timeout_ms = 500 })
    c:register("noargs", function() end)
    c:open()
    t.eq(stubs.opened[1].url, URL)
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    local hello = json.decode(ws.sent[1])
    t.eq(hello.type, "hello")
    t.eq(hello.client_id, "a")
    t.eq(hello.token, "s3cret")
    t.eq(hello.protocol_version, 1)
    t.eq(#hello.commands, 2)
    t.eq(hello.commands[1].name, "echo")
    t.eq(hello.commands[1].timeout_ms, 500)
    t.truthy(ws.sent[1]:find('"properties":{}', 1, true), "empty properties stays an object")
end)

t.test("hello with no commands sends commands: [] (not {})", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "a" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    t.truthy(ws.sent[1]:find('"commands":[]', 1, true), ws.sent[1])
end)

t.test("command_call runs the handler and sends command_result ok", function()
    local c, ws = ready_client()
    local seen
    c:register("add", function(args, task_id, call_id)
        seen = { task_id, call_id }
        return { sum = args.a + args.b }
    end)
    call(c, "call-1", "add", { a = 2, b = 3 })
    local r = of_type(ws, "command_result")[1]
    t.eq(r.ok, true)
    t.eq(r.result.sum, 5)
    t.eq(r.call_id, "call-1")
    t.eq(r.task_id, "task-1")
    t.same(seen, { "task-1", "call-1" })
end)

t.test("a handler returning nothing still sends a result object", function()
    local c, ws = ready_client()
    c:register("nop", function() end)
    call(c, "n1", "nop")
    local text
    for _, f in ipairs(ws.sent) do if f:find('"command_result"', 1, true) then text = f end end
    t.truthy(text and text:find('"result":{}', 1, true), text)
end)

t.test("a handler error becomes ok=false with message and traceback", function()
    local c, ws = ready_client()
    c:register("boom", function() error("kaput") end)
    call(c, "b1", "boom")
    local r = of_type(ws, "command_result")[1]
    t.eq(r.ok, false)
    t.truthy(r.error.message:find("kaput"), r.error.message)
    t.eq(r.error.code, "runtime_error")
    t.truthy(type(r.error.traceback) == "string" and r.error.traceback:find("traceback"), "has a traceback")
end)

t.test("a table error keeps its code", function()
    local c, ws = ready_client()
    c:register("nf", function() error({ code = "not_found", message = "no such file" }) end)
    call(c, "e1", "nf")
    local r = of_type(ws, "command_result")[1]
    t.eq(r.error.code, "not_found")
    t.eq(r.error.message, "no such file")
end)

t.test("an unknown command answers not_found without crashing", function()
    local c, ws = ready_client()
    call(c, "u1", "nope")
    local r = of_type(ws, "command_result")[1]
    t.eq(r.ok, false)
    t.eq(r.error.code, "not_found")
end)

t.test("a repeated call_id returns the stored result and does not run twice", function()
    local c, ws = ready_client()
    local runs = 0
    c:register("count", function() runs = runs + 1 return { n = runs } end)
    call(c, "dup", "count")
    call(c, "dup", "count")
    t.eq(runs, 1, "handler runs")
    local rs = of_type(ws, "command_result")
    t.eq(#rs, 2)
    t.eq(rs[2].result.n, 1)
end)

t.test("a repeated call_id after command_ack still gets the stored result", function()
    local c, ws = ready_client()
    local runs = 0
    c:register("count", function() runs = runs + 1 return { n = runs } end)
    call(c, "dup2", "count")
    c:handle_event("websocket_message", URL, frame({ type = "command_ack", task_id = "task-1", call_id = "dup2" }))
    call(c, "dup2", "count")
    t.eq(runs, 1)
    t.eq(#of_type(ws, "command_result"), 2)
end)

t.test("the result cache is bounded and evicts acknowledged results first", function()
    local c = ready_client({ client_id = "x", result_cache = 3 })
    c:register("id", function(a) return a end)
    for i = 1, 3 do call(c, "k" .. i, "id") end
    c:handle_event("websocket_message", URL, frame({ type = "command_ack", task_id = "task-1", call_id = "k2" }))
    call(c, "k4", "id")
    t.eq(c.results.k2, nil, "acked k2 evicted")
    t.truthy(c.results.k1, "unacked k1 kept")
    t.eq(#c.result_order, 3)
end)

t.test("a handler that waits runs as a coroutine; the connection keeps serving", function()
    local c, ws = ready_client()
    c:register("slow", function()
        local ev, v = os.pullEvent("slow_done")
        return { got = v, ev = ev }
    end)
    call(c, "s1", "slow")
    t.eq(#of_type(ws, "command_result"), 0, "no result yet")
    c:handle_event("websocket_message", URL, frame({ type = "ping", id = "p1" }))
    local pong = of_type(ws, "pong")[1]
    t.eq(pong and pong.id, "p1", "ping answered while the command waits")
    c:handle_event("other_event", 1)
    t.eq(#of_type(ws, "command_result"), 0, "filtered events do not wake it")
    c:handle_event("slow_done", 42)
    local r = of_type(ws, "command_result")[1]
    t.eq(r.result.got, 42)
end)

t.test("a command past its timeout_ms fails with code timeout", function()
    local c, ws = ready_client()
    c:register("hang", function() os.pullEvent("never") end)
    c:handle_event("websocket_message", URL, frame({ type = "command_call", task_id = "task-1",
        call_id = "h1", command = "hang", args = json.object(), timeout_ms = 1500 }))
    local timer_id
    for id, secs in pairs(stubs.timers) do if secs == 1.5 then timer_id = id end end
    t.truthy(timer_id, "a 1.5 s timer was started")
    c:handle_event("timer", timer_id)
    local r = of_type(ws, "command_result")[1]
    t.eq(r.error.code, "timeout")
    t.eq(c.running.h1, nil)
end)

t.test("unacked results are kept and re-sent after a reconnect; acked ones are not", function()
    local c, ws = ready_client()
    c:register("id", function(a) return a end)
    call(c, "r1", "id", { v = 1 })
    call(c, "r2", "id", { v = 2 })
    c:handle_event("websocket_message", URL, frame({ type = "command_ack", task_id = "task-1", call_id = "r1" }))
    c:handle_event("websocket_closed", URL, "server restart")
    t.eq(c.state, "waiting")
    t.truthy(c.retry_timer, "a reconnect timer")
    c:handle_event("timer", c.retry_timer)
    t.eq(c.state, "connecting")
    local ws2 = stubs.socket()
    c:handle_event("websocket_success", URL, ws2)
    t.eq(json.decode(ws2.sent[1]).type, "hello", "hello first")
    t.eq(#of_type(ws2, "command_result"), 0, "nothing before welcome")
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1,
        max_message_bytes = 131072, heartbeat_ms = 0 }))
    local rs = of_type(ws2, "command_result")
    t.eq(#rs, 1)
    t.eq(rs[1].call_id, "r2")
    t.eq(#ws.sent > 0, true)
end)

t.test("a socket the computer reported closed is not closed again; one the client gives up on is", function()
    -- Guards against calling close() on a dead handle: CraftOS-PC aborted in websocket_close after a server restart.
    local c, ws = ready_client()
    c:handle_event("websocket_closed", URL, "server restart")
    t.eq(ws.close_calls, 0, "no close() after websocket_closed")
    t.eq(c.state, "waiting")
    c:handle_event("timer", c.retry_timer)
    local ws2 = stubs.socket()
    c:handle_event("websocket_success", URL, ws2)
    c:stop()
    t.eq(ws2.close_calls, 1, "stop() closes the live socket")
end)

t.test("a result finished while offline is sent after the welcome", function()
    local c = ready_client()
    c:register("wait", function() os.pullEvent("go") return { done = true } end)
    call(c, "w1", "wait")
    c:handle_event("websocket_closed", URL)
    c:handle_event("go")
    t.truthy(c.results.w1, "stored while offline")
    c:handle_event("timer", c.retry_timer)
    local ws2 = stubs.socket()
    c:handle_event("websocket_success", URL, ws2)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    t.eq(of_type(ws2, "command_result")[1].call_id, "w1")
end)

t.test("backoff doubles, is capped and jittered, and resets after a welcome", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "b", reconnect_min = 1, reconnect_max = 8 })
    c:open()
    local delays = {}
    for i = 1, 6 do
        c:handle_event("websocket_failure", URL, "refused")
        delays[i] = c.retry_delay
        c:handle_event("timer", c.retry_timer)
    end
    t.truthy(delays[1] >= 0.5 and delays[1] <= 1, "first delay " .. delays[1])
    t.truthy(delays[3] >= 2 and delays[3] <= 4, "third delay " .. delays[3])
    for i = 4, 6 do t.truthy(delays[i] <= 8 and delays[i] >= 4, "capped delay " .. delays[i]) end
    c:handle_event("websocket_success", URL, stubs.socket())
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    t.eq(c.attempt, 0)
    t.eq(#stubs.events_named("ccagent_connection") > 0, true)
end)

t.test("stale websocket_success after a timeout is closed, not adopted", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "s" })
    c:open()
    c:handle_event("timer", c.connect_timer)
    t.eq(c.state, "waiting")
    local late = stubs.socket()
    c:handle_event("websocket_success", URL, late)
    t.eq(late.closed, true)
    t.eq(c.ws, nil)
end)

t.test("a server speaking another protocol version stops the client", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "p" })
    c:open()
    c:handle_event("websocket_success", URL, stubs.socket())
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 2 }))
    t.eq(c.state, "stopped")
    t.eq(stubs.events_named("ccagent_error")[1][2], "protocol_version")
end)

t.test("a refused token keeps retrying, but at the slowest pace (guards: hammering the server)", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "t", token = "wrong", reconnect_min = 1, reconnect_max = 30 })
    c:open()
    c:handle_event("websocket_success", URL, stubs.socket())
    c:handle_event("websocket_message", URL, frame({ type = "error", code = "unauthorized", message = "bad token" }))
    c:handle_event("websocket_closed", URL, "unauthorized")
    t.eq(c.state, "waiting")
    t.truthy(c.retry_delay >= 15, "delay " .. c.retry_delay)
    t.eq(stubs.events_named("ccagent_error")[1][2], "unauthorized")
end)

t.test("a result larger than max_message_bytes goes out as chunk frames", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "big" })
    c:register("big", function() return { content = ("z"):rep(5000) } end)
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL,
        frame({ type = "welcome", protocol_version = 1, max_message_bytes = 2048 }))
    call(c, "g1", "big")
    local chunks = of_type(ws, "chunk")
    t.truthy(#chunks >= 3, "chunks " .. #chunks)
    local parts = {}
    for i, m in ipairs(chunks) do parts[i] = m.data end
    for i = 1, #ws.sent do t.truthy(#ws.sent[i] <= 2048, "frame size " .. #ws.sent[i]) end
    local whole = json.decode(table.concat(parts))
    t.eq(whole.type, "command_result")
    t.eq(#whole.result.content, 5000)
end)

-- The server fails a result over its max_tool_output_bytes (its welcome says how many): the client cuts it first.
local function limited_client(limit)
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "limited" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1,
        max_message_bytes = 131072, max_tool_output_bytes = limit }))
    return c, ws
end

local function sent_results(ws)
    local chunks, parts = of_type(ws, "chunk"), {}
    for i, m in ipairs(chunks) do parts[i] = m.data end
    local out = of_type(ws, "command_result")
    if #parts > 0 then out[#out + 1] = json.decode(table.concat(parts)) end
    return out
end

t.test("a result over the server's max_tool_output_bytes is cut to fit, marked, the rest kept whole " ..
    "(guards: a refused result and a task waiting for the tool timeout)", function()
    local c, ws = limited_client(4000)
    local text = ("0123456789"):rep(1000) -- 10,000 bytes
    c:register("read", function() return { path = "/big.txt", content = text, size = #text } end)
    call(c, "r1", "read")
    local sent = ws.sent[#ws.sent]
    t.truthy(#sent <= 4000, "sent " .. #sent .. " bytes")
    local r = sent_results(ws)[1]
    t.eq(r.ok, true)
    t.eq(r.result.truncated, true)
    t.eq(r.result.path, "/big.txt")
    t.eq(r.result.size, 10000)
    local kept, cut, total = r.result.content:match("^(%d+)\n%[%.%.%. (%d+) bytes cut: the result was (%d+) bytes")
    t.truthy(kept, "content ends with the note: " .. r.result.content:sub(-120))
    t.eq(#kept + tonumber(cut), 10000)
    t.truthy(#kept > 3000, "kept " .. #kept)
    t.eq(text:sub(1, #kept), kept)
    t.truthy(tonumber(total) > 10000)
    -- The stored copy (re-sent after a reconnect) is the cut one.
    t.eq(c.results.r1.text, sent)
end)

t.test("a cut never splits a UTF-8 character, a bare string and an error message are cut too, and a result of " ..
    "no strings becomes an output_too_large error", function()
    local c, ws = limited_client(2000)
    local accents = ("é✓"):rep(1000)
    c:register("utf8", function() return accents end)
    c:register("fail", function() error(("m"):rep(5000), 0) end)
    c:register("numbers", function()
        local a = json.array()
        for i = 1, 2000 do a[i] = i end
        return a
    end)
    call(c, "u1", "utf8")
    call(c, "f1", "fail")
    call(c, "n1", "numbers")
    local got = {}
    for _, m in ipairs(sent_results(ws)) do got[m.call_id] = m end
    for _, f in ipairs(ws.sent) do t.truthy(#f <= 2000, "frame " .. #f) end
    local kept = got.u1.result:match("^(.-)\n%[%.%.%.")
    t.truthy(kept and #kept > 0 and #kept % 5 == 0, "whole characters kept: " .. tostring(kept and #kept))
    t.eq(accents:sub(1, #kept), kept)
    t.eq(got.f1.ok, false)
    t.eq(got.f1.error.code, "runtime_error")
    t.truthy(got.f1.error.message:find("bytes cut", 1, true), "error message cut")
    t.eq(got.n1.ok, false)
    t.eq(got.n1.error.code, "output_too_large")
end)

t.test("a result kept from before the limit was known is cut when it is re-sent to a server that names one",
    function()
    local c, ws = ready_client() -- an older server: no max_tool_output_bytes
    c:register("read", function() return { content = ("y"):rep(9000) } end)
    call(c, "k1", "read")
    t.eq(#sent_results(ws)[1].result.content, 9000)
    c:handle_event("websocket_closed", URL, "server restart")
    c:handle_event("timer", c.retry_timer)
    local ws2 = stubs.socket()
    c:handle_event("websocket_success", URL, ws2)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1,
        max_message_bytes = 131072, max_tool_output_bytes = 3000 }))
    local again = sent_results(ws2)[1]
    t.eq(again.call_id, "k1")
    t.eq(again.result.truncated, true)
    t.truthy(#ws2.sent[#ws2.sent] <= 3000, "re-sent within the limit")
    t.eq(c.results.k1.text, ws2.sent[#ws2.sent], "the cut copy replaces the stored one")
end)

t.test("without max_tool_output_bytes in the welcome (an older server) a result is sent whole", function()
    local c, ws = ready_client()
    c:register("read", function() return { content = ("x"):rep(200000) } end)
    call(c, "w1", "read")
    t.eq(#sent_results(ws)[1].result.content, 200000)
end)

t.test("incoming chunk frames are reassembled and dispatched", function()
    local c, ws = ready_client()
    local got
    c:register("write", function(args) got = args.content return { n = #args.content } end)
    local text = frame({ type = "command_call", task_id = "task-1", call_id = "cw", command = "write",
        args = { content = ("q"):rep(10000) } })
    local chunk = require "ccagent.chunk"
    for _, f in ipairs(chunk.split(text, 3000, "in-1")) do c:handle_event("websocket_message", URL, f) end
    t.eq(got and #got, 10000)
    t.eq(of_type(ws, "command_result")[1].result.n, 10000)
end)

t.test("a bad chunk frame is dropped with a chunk_error event, and nothing invalid is sent back", function()
    local c, ws = ready_client()
    local sent = #ws.sent
    c:handle_event("websocket_message", URL, frame({ type = "chunk", chunk_id = "x", index = 5, count = 2, data = "" }))
    t.eq(stubs.events_named("ccagent_error")[1][2], "chunk_error")
    t.eq(#ws.sent, sent, "clients have no error message in the protocol")
    t.eq(c.state, "ready")
end)

t.test("create_task sends a request_id and allowed_commands; task_created fires the callback", function()
    local c, ws = ready_client()
    c:register("fs_read", function() end)
    local created
    local rid = c:create_task({ kind = "code", prompt = "fix TODO.lua", context = { file = "/TODO.lua" },
        on_created = function(id, status) created = { id, status } end })
    local m = of_type(ws, "create_task")[1]
    t.eq(m.request_id, rid)
    t.eq(m.task_kind, "code")
    t.eq(m.client_id, "turtle-1")
    t.same(m.allowed_commands, json.array({ "fs_read" }))
    c:handle_event("websocket_message", URL, frame({ type = "task_created", request_id = rid, task_id = "T1",
        status = "queued" }))
    t.same(created, { "T1", "queued" })
    t.eq(c.tasks.T1.status, "queued")
    local ev = stubs.events_named("ccagent_task")[1]
    t.eq(ev[2], "T1")
    t.eq(ev[3], "queued")
end)

t.test("create_task with no commands sends allowed_commands: []", function()
    local c, ws = ready_client()
    c:create_task({ prompt = "hi" })
    t.truthy(ws.sent[#ws.sent]:find('"allowed_commands":[]', 1, true), ws.sent[#ws.sent])
end)

t.test("a refused create_task calls on_created(nil, code, message)", function()
    local c = ready_client()
    local got
    local rid = c:create_task({ prompt = "x", on_created = function(...) got = { ... } end })
    c:handle_event("websocket_message", URL, frame({ type = "error", request_id = rid, code = "forbidden",
        message = "no" }))
    t.eq(got[1], nil)
    t.eq(got[2], "forbidden")
end)

t.test("task_update / task_completed / task_failed keep the tasks table current", function()
    local c = ready_client()
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    rx({ type = "task_update", task_id = "T2", status = "running", progress = 0.5, message = "half" })
    t.eq(c.tasks.T2.status, "running")
    t.eq(c.tasks.T2.progress, 0.5)
    rx({ type = "task_completed", task_id = "T2", result = { answer = 42 } })
    t.eq(c.tasks.T2.status, "completed")
    t.eq(c.tasks.T2.result.answer, 42)
    rx({ type = "task_failed", task_id = "T3", error = { code = "internal", message = "x" } })
    t.eq(c.tasks.T3.status, "failed")
    local evs = stubs.events_named("ccagent_task")
    t.eq(evs[#evs][3], "failed")
end)

t.test("a terminal task_update waits for task_completed: the end is announced with its result", function()
    -- guards: a program woken by `ccagent_task … completed` found tasks[id].result still nil (the orchestrator
    -- sends task_update{status=completed} just before task_completed{result})
    local c = ready_client()
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    rx({ type = "task_update", task_id = "T5", status = "running" })
    rx({ type = "task_update", task_id = "T5", status = "completed", progress = 1, message = "done" })
    t.eq(c.tasks.T5.status, "running", "not completed before the result is known")
    t.eq(c.tasks.T5.message, "done")
    local evs = stubs.events_named("ccagent_task")
    t.eq(evs[#evs][3], "running", "no completed event yet")
    rx({ type = "task_completed", task_id = "T5", result = { n = 1 } })
    evs = stubs.events_named("ccagent_task")
    t.eq(evs[#evs][3], "completed")
    t.eq(evs[#evs][4].result.n, 1, "the event's task table has the result")
    rx({ type = "task_update", task_id = "T6", status = "failed" })
    t.eq(c.tasks.T6.status, nil)
    rx({ type = "task_failed", task_id = "T6", error = { code = "x", message = "y" } })
    t.eq(c.tasks.T6.status, "failed")
    t.eq(c.tasks.T6.error.code, "x")
    -- a repeat of the status the task already has (subscribe's current-state reply) is harmless
    rx({ type = "task_update", task_id = "T6", status = "failed" })
    t.eq(c.tasks.T6.status, "failed")
    rx({ type = "task_update", task_id = "T7", status = "cancelled" })
    t.eq(c.tasks.T7.status, "cancelled", "cancelled has no outcome message: announced by task_update")
end)

-- Drop the connection and come back: the orchestrator replays the current state of the tasks that changed while
-- the client was away (task_update, then task_completed/task_failed for an ended one) right after `welcome`.
local function reconnect(c)
    c:handle_event("websocket_closed", URL, "server restart")
    c:handle_event("timer", c.retry_timer)
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    t.eq(c.state, "ready", "welcomed again")
    return ws
end

local function task_events(id)
    local out = {}
    for _, e in ipairs(stubs.events_named("ccagent_task")) do
        if e[2] == id then out[#out + 1] = e[3] end
    end
    return out
end

local function copy(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = copy(x) end
    return out
end

t.test("replayed task_completed after a reconnect: no second event, no second callback, entry unchanged", function()
    -- guards: a returning client announcing a finished task's end again (programs waiting on ccagent_task
    -- would act twice, the terminal UI printed the result twice)
    local c = ready_client()
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    local created = 0
    local rid = c:create_task({ prompt = "p", on_created = function() created = created + 1 end })
    rx({ type = "task_created", request_id = rid, task_id = "R1", status = "queued" })
    rx({ type = "task_update", task_id = "R1", status = "running", progress = 0.5, message = "half" })
    rx({ type = "task_update", task_id = "R1", status = "completed", progress = 1, message = "done" })
    rx({ type = "task_completed", task_id = "R1", result = { answer = 42 } })
    t.same(task_events("R1"), { "queued", "running", "completed" })
    local before = copy(c.tasks.R1)
    t.eq(before.result.answer, 42)
    reconnect(c)
    -- the replay, a stale update crossing it, a repeated task_created, a stale question
    rx({ type = "task_update", task_id = "R1", status = "completed", progress = 1, message = "replayed" })
    rx({ type = "task_completed", task_id = "R1", result = { answer = 43 } })
    rx({ type = "task_update", task_id = "R1", status = "running", progress = 0.2, message = "stale" })
    rx({ type = "task_failed", task_id = "R1", error = { code = "x", message = "y" } })
    rx({ type = "task_created", request_id = rid, task_id = "R1", status = "queued" })
    rx({ type = "ask_user", task_id = "R1", question_id = "q-old", question = "still there?" })
    t.same(task_events("R1"), { "queued", "running", "completed" }, "no event after the end")
    t.eq(created, 1, "on_created fired once")
    t.same(c.tasks.R1, before, "tasks entry unchanged")
    t.eq(c.tasks.R1.status, "completed")
    t.eq(#stubs.events_named("ccagent_question"), 0, "no question for a finished task")
    t.eq(c.subscriptions.R1, nil, "not re-subscribed")
end)

t.test("replayed task_failed and cancelled after a reconnect change nothing and announce nothing", function()
    local c = ready_client()
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    rx({ type = "task_update", task_id = "F1", status = "running" })
    rx({ type = "task_failed", task_id = "F1", error = { code = "budget", message = "out of steps" } })
    rx({ type = "task_update", task_id = "C1", status = "running" })
    rx({ type = "task_update", task_id = "C1", status = "cancelled", message = "by user" })
    local failed, cancelled = copy(c.tasks.F1), copy(c.tasks.C1)
    local n = #stubs.events_named("ccagent_task")
    reconnect(c)
    rx({ type = "task_update", task_id = "F1", status = "failed", message = "replayed" })
    rx({ type = "task_failed", task_id = "F1", error = { code = "other", message = "z" } })
    rx({ type = "task_update", task_id = "F1", status = "waiting_for_command" })
    rx({ type = "task_update", task_id = "C1", status = "cancelled", message = "replayed" })
    rx({ type = "task_update", task_id = "C1", status = "queued" })
    t.eq(#stubs.events_named("ccagent_task"), n, "no ccagent_task event")
    t.same(c.tasks.F1, failed)
    t.same(c.tasks.C1, cancelled)
    t.eq(c.tasks.F1.error.code, "budget")
end)

t.test("a task that ended while the client was away is announced once by the replay", function()
    -- guards: the idempotency check swallowing the first (replayed) news of an end
    local c = ready_client()
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    rx({ type = "task_update", task_id = "A1", status = "running" })
    reconnect(c)
    rx({ type = "task_update", task_id = "A1", status = "completed", progress = 1 })
    rx({ type = "task_completed", task_id = "A1", result = { ok = true } })
    rx({ type = "task_update", task_id = "A1", status = "completed", progress = 1 })
    rx({ type = "task_completed", task_id = "A1", result = { ok = true } })
    t.same(task_events("A1"), { "running", "completed" })
    t.eq(c.tasks.A1.result.ok, true)
end)

t.test("only the newest keep_ended ended tasks are remembered; memory stays bounded over many tasks", function()
    -- guards: `ended` and `tasks` growing by one entry per finished task for as long as the program runs (a
    -- computer running tasks all night ran out of memory), and forgetting a task that is still running
    local c = ready_client({ client_id = "turtle-1", keep_ended = 3 })
    local function rx(m) c:handle_event("websocket_message", URL, frame(m)) end
    rx({ type = "task_update", task_id = "LIVE", status = "running" })
    for i = 1, 5 do
        rx({ type = "task_update", task_id = "E" .. i, status = "running" })
        rx({ type = "task_completed", task_id = "E" .. i, result = { n = i } })
    end
    t.eq(c.tasks.E1, nil, "oldest end forgotten")
    t.eq(c.tasks.E2, nil)
    t.eq(c:_ended("E2"), false)
    for i = 3, 5 do
        t.eq(c.tasks["E" .. i].result.n, i, "newest ends kept")
        t.eq(c:_ended("E" .. i), true)
    end
    t.eq(c.tasks.LIVE.status, "running", "a running task is never forgotten")
    -- a replayed end of a remembered task still announces nothing
    local n = #stubs.events_named("ccagent_task")
    rx({ type = "task_completed", task_id = "E5", result = { n = 99 } })
    t.eq(#stubs.events_named("ccagent_task"), n)
    t.eq(c.tasks.E5.result.n, 5)
    for i = 6, 2000 do
        rx({ type = "task_update", task_id = "E" .. i, status = "running" })
        rx({ type = "task_failed", task_id = "E" .. i, error = { code = "x", message = "y" } })
    end
    local ended, tasks, order = 0, 0, 0
    for _ in pairs(c.ended) do ended = ended + 1 end
    for _ in pairs(c.tasks) do tasks = tasks + 1 end
    for _ in pairs(c.ended_order) do order = order + 1 end
    t.eq(ended, 3, "ended table bounded")
    t.eq(order, 3, "order list bounded")
    t.eq(tasks, 4, "tasks: the 3 newest ends and the running one")
    t.eq(c.tasks.E2000.status, "failed")
end)

t.test("keep_ended defaults to 256 and must be a number", function()
    stubs.reset()
    t.eq(ccagent.connect(URL, { client_id = "x" }).keep_ended, 256)
    local ok, err = pcall(ccagent.connect, URL, { client_id = "x", keep_ended = "many" })
    t.eq(ok, false)
    t.truthy(tostring(err):find("keep_ended"), tostring(err))
end)

t.test("ask_user queues ccagent_question; answer sends user_answer (both signatures)", function()
    local c, ws = ready_client()
    c:handle_event("websocket_message", URL, frame({ type = "ask_user", task_id = "T4", question_id = "q1",
        question = "Which chest?", why = "two found" }))
    local ev = stubs.events_named("ccagent_question")[1]
    t.same({ ev[2], ev[3], ev[4], ev[5] }, { "T4", "q1", "Which chest?", "two found" })
    t.eq(c.tasks.T4.status, "waiting_for_user")
    c:answer("q1", "the left one")
    local a = of_type(ws, "user_answer")[1]
    t.same({ a.task_id, a.question_id, a.text }, { "T4", "q1", "the left one" })
    c:answer("T4", "q9", "explicit")
    t.eq(of_type(ws, "user_answer")[2].question_id, "q9")
end)

t.test("a repeated ask_user for an open question is not announced again; after answer() it is", function()
    -- guards: after a reconnect the server re-sends open questions and its subscribe reply repeats them, so a
    -- program (the terminal UI) showed the same question two or three times
    local c = ready_client()
    local function ask() c:handle_event("websocket_message", URL, frame({ type = "ask_user", task_id = "T8",
        question_id = "q8", question = "Which chest?" })) end
    ask()
    ask()
    t.eq(#stubs.events_named("ccagent_question"), 1)
    c:answer("q8", "left")
    ask() -- the answer may not have arrived (server restarted before storing it): ask again
    t.eq(#stubs.events_named("ccagent_question"), 2)
end)

t.test("messages sent while offline are queued and flushed after welcome; subscriptions renewed", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "o" })
    c:subscribe("T9")
    c:create_task({ prompt = "queued while offline" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    local types = {}
    for _, m in ipairs(decoded(ws)) do types[#types + 1] = m.type end
    t.eq(types[1], "hello")
    t.eq(#of_type(ws, "create_task"), 1)
    t.truthy(#of_type(ws, "subscribe") >= 1, "subscribe sent")
end)

t.test("ping gets a pong with the same id", function()
    local c, ws = ready_client()
    c:handle_event("websocket_message", URL, frame({ type = "ping", id = 17 }))
    t.eq(of_type(ws, "pong")[1].id, 17)
end)

t.test("heartbeat: silence pings, long silence reconnects", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "h" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1, heartbeat_ms = 1000 }))
    stubs.clock = stubs.clock + 1500
    c:handle_event("timer", c.heartbeat_timer)
    t.eq(#of_type(ws, "ping"), 1, "pinged after 1.5 s of silence")
    stubs.clock = stubs.clock + 2000
    c:handle_event("timer", c.heartbeat_timer)
    t.eq(c.state, "waiting", "declared dead after > 3 heartbeats")
    t.eq(ws.closed, true)
end)

t.test("garbage frames are ignored without breaking the connection", function()
    local c, ws = ready_client()
    c:handle_event("websocket_message", URL, "not json")
    c:handle_event("websocket_message", URL, "[1,2]")
    c:handle_event("websocket_message", URL, frame({ type = "mystery" }))
    c:handle_event("websocket_message", URL, frame({ type = "command_call", call_id = 5 }))
    t.eq(c.state, "ready")
    c:handle_event("websocket_message", URL, frame({ type = "ping" }))
    t.eq(#of_type(ws, "pong"), 1)
end)

t.test("register after connecting re-sends hello once per batch of changes", function()
    local c, ws = ready_client()
    local before = #of_type(ws, "hello")
    c:register("late", function() end)
    c:register("later", function() end)
    t.eq(#stubs.events_named("ccagent_flush"), 1, "one flush event queued for the batch")
    c:handle_event("ccagent_flush")
    local hellos = of_type(ws, "hello")
    t.eq(#hellos, before + 1, "one hello for two registrations")
    t.eq(hellos[#hellos].commands[1].name, "late")
    t.eq(hellos[#hellos].commands[2].name, "later")
    c:unregister("late")
    c:unregister("later")
    c:handle_event("ccagent_flush")
    hellos = of_type(ws, "hello")
    t.eq(#hellos[#hellos].commands, 0)
    -- the server's welcome for a re-sent hello does not replay anything
    c:handle_event("websocket_message", URL, frame({ type = "welcome", client_id = "turtle-1",
        server_version = "1", protocol_version = 1, heartbeat_ms = 1000, max_message_bytes = 131072 }))
    t.eq(decoded(ws)[#ws.sent].type, "hello", "nothing sent in reply to the second welcome")
end)

t.test("the tool snapshot rides in hello, follows every welcome and each change as tools_update", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "tools" })
    c:set_tools({ { name = "dig", status = "draft", version = 1, file = "/tools/dig.lua", updated_at = 5 } })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    local hello = json.decode(ws.sent[1])
    t.eq(hello.tools[1].name, "dig")
    c:handle_event("websocket_message", URL, frame({ type = "welcome", protocol_version = 1 }))
    local ups = of_type(ws, "tools_update")
    t.eq(#ups, 1, "tools_update after the welcome")
    t.eq(ups[1].tools[1].status, "draft")
    c:set_tools({ { name = "dig", status = "active", version = 1 } })
    c:set_tools({ { name = "dig", status = "active", version = 1 }, { name = "mine", status = "draft", version = 1 } })
    c:handle_event("ccagent_flush")
    ups = of_type(ws, "tools_update")
    t.eq(#ups, 2, "two changes in a batch: one tools_update")
    t.eq(#ups[2].tools, 2)
    c:set_tools({})
    c:handle_event("ccagent_flush")
    t.truthy(ws.sent[#ws.sent]:find('"tools":[]', 1, true), "an empty registry is [] not {}")
end)

t.test("a tool change while offline is carried by the next hello, not queued", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "off" })
    c:set_tools({ { name = "a", status = "draft", version = 1 } })
    c:handle_event("ccagent_flush")
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    t.eq(#decoded(ws), 1, "only the hello")
    t.eq(json.decode(ws.sent[1]).tools[1].name, "a")
end)

t.test("a command that registers a command or changes the tool registry announces it before its result", function()
    -- guards: the orchestrator took the result, asked the model for the next step, and the model's call of the
    -- just-activated tool was refused as unknown_command because the hello/tools_update came after the result
    local c, ws = ready_client()
    c:register("activate", function()
        c:register("greet", function() return { hi = true } end)
        c:set_tools({ { name = "greet", status = "active", version = 1 } })
        return { ok = true }
    end)
    c:handle_event("ccagent_flush")
    local from = #ws.sent + 1
    call(c, "a1", "activate")
    local types = {}
    for _, m in ipairs(decoded(ws, from)) do types[#types + 1] = m.type end
    t.same(types, { "hello", "tools_update", "command_result" })
    local hello = decoded(ws, from)[1]
    t.eq(hello.commands[#hello.commands].name, "greet")
    c:handle_event("ccagent_flush")
    t.eq(#ws.sent, from + 2, "the queued flush finds nothing left to send")
end)

t.test("run() returns after stop() and only waits through os.pullEventRaw", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "r" })
    local co = coroutine.create(function() c:run() return "returned" end)
    local ok, filter = coroutine.resume(co)
    t.eq(ok, true)
    t.eq(filter, nil, "waits for any event")
    t.eq(c.state, "connecting")
    c:stop()
    local ok2, res = coroutine.resume(co, "ccagent_stop")
    t.eq(ok2, true)
    t.eq(res, "returned")
end)

t.test("terminate stops run() with 'Terminated' and closes the socket", function()
    local c, ws = ready_client()
    local co = coroutine.create(function() c:run() end)
    coroutine.resume(co)
    local ok, err = coroutine.resume(co, "terminate")
    t.eq(ok, false)
    t.eq(err, "Terminated")
    t.eq(ws.closed, true)
end)

t.done()

t.test("command_cancel terminates the handler, answers once with cancelled, and never resumes it", function()
    local c, ws = ready_client()
    local steps, saw = 0, nil
    c:register("spin", function()
        while true do
            steps = steps + 1
            local ev = { os.pullEventRaw() }
            saw = ev[1]
            if ev[1] == "terminate" then
                -- a stubborn handler: it swallows the terminate and keeps going
                saw = "terminate"
            end
        end
    end)
    call(c, "k1", "spin")
    c:handle_event("tick")
    t.eq(steps, 2)
    c:handle_event("websocket_message", URL, frame({ type = "command_cancel", task_id = "task-1",
        call_id = "k1", reason = "task cancelled" }))
    t.eq(saw, "terminate", "the handler saw terminate, as CC's Ctrl+T would deliver it")
    local results = of_type(ws, "command_result")
    t.eq(#results, 1)
    t.eq(results[1].ok, false)
    t.same(results[1].error, { code = "cancelled", message = "task cancelled" })
    local before = steps
    c:handle_event("tick")
    c:handle_event("timer", 1)
    t.eq(steps, before, "a cancelled handler is never resumed again")
    c:handle_event("websocket_message", URL, frame({ type = "command_cancel", task_id = "task-1",
        call_id = "k1", reason = "again" }))
    t.eq(#of_type(ws, "command_result"), 1, "a second cancel is not answered")
end)

t.test("message and event send task_message and task_event", function()
    local c, ws = ready_client()
    c:message("T1", "use birch")
    c:event("T1", "redstone", { on = true })
    local m = of_type(ws, "task_message")[1]
    t.eq(m.task_id, "T1")
    t.eq(m.text, "use birch")
    t.eq(type(m.request_id), "string")
    local e = of_type(ws, "task_event")[1]
    t.eq(e.name, "redstone")
    t.same(e.data, { on = true })
    t.raises(function() c:message("T1") end, "bad argument #2")
end)

-- guards: a computer stuck on a dead or standby orchestrator
t.test("several server URLs: a refused or lost connection moves on to the next one at once", function()
    stubs.reset()
    local A, B = "ws://10.0.0.1:7420/ws", "ws://10.0.0.2:7420/ws"
    local c = ccagent.connect(A .. ", " .. B, { client_id = "f", reconnect_min = 2, reconnect_max = 8 })
    t.eq(#c.urls, 2)
    t.eq(c.urls[2], B)
    c:open()
    t.eq(stubs.opened[1].url, A)
    -- A refuses (a standby answers 503): B is tried next, without the backoff.
    c:handle_event("websocket_failure", A, "refused")
    t.truthy(c.retry_delay <= 0.1, "next URL at once, not " .. c.retry_delay)
    c:handle_event("timer", c.retry_timer)
    t.eq(stubs.opened[2].url, B)
    -- B refuses too: a whole round failed, so back to A after the backoff.
    c:handle_event("websocket_failure", B, "refused")
    t.truthy(c.retry_delay >= 1, "backoff after a round, got " .. c.retry_delay)
    c:handle_event("timer", c.retry_timer)
    t.eq(stubs.opened[3].url, A)
    -- A accepts; its late events are A's, B's stale ones are ignored.
    local ws = stubs.socket()
    c:handle_event("websocket_success", A, ws)
    c:handle_event("websocket_message", A, frame({ type = "welcome", protocol_version = 1 }))
    t.eq(c.state, "ready")
    -- The active orchestrator dies: the client goes to the other one at once.
    c:handle_event("websocket_closed", A)
    t.eq(c.url, B)
    t.truthy(c.retry_delay <= 0.1, "failover at once, not " .. c.retry_delay)
    c:handle_event("timer", c.retry_timer)
    t.eq(stubs.opened[4].url, B)
    c:handle_event("websocket_success", B, stubs.socket())
    t.eq(c.state, "open")
end)

t.test("a list of server URLs is accepted as a table; none at all is an argument error", function()
    stubs.reset()
    local c = ccagent.connect({ "ws://a/ws", "ws://b/ws" }, { client_id = "g" })
    t.eq(c.url, "ws://a/ws")
    t.eq(#c.urls, 2)
    local ok, err = pcall(ccagent.connect, " , ", {})
    t.eq(ok, false)
    t.truthy(tostring(err):find("no server URL"), tostring(err))
end)
