-- In-game triggers (ccagent.triggers) driven event by event through the real client with stubbed os/http: the
-- file's checks, debouncing, and the frames that leave for the orchestrator. The CraftOS tier runs the same code
-- on a real computer (test/craftos/triggers.test.ts).
local t = require "helper"
local stubs = require "stubs"
local json = require "ccagent.json"
local ccagent = require "ccagent"
local triggers = require "ccagent.triggers"

local URL = "ws://127.0.0.1:1/ws"

local function ready_client()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "farm" })
    c:open()
    local ws = stubs.socket()
    c:handle_event("websocket_success", URL, ws)
    c:handle_event("websocket_message", URL, assert(json.encode({ type = "welcome", client_id = "farm",
        server_version = "1", protocol_version = 1, heartbeat_ms = 0, max_message_bytes = 131072 })))
    return c, ws
end

local function sent(ws, typ)
    local out = {}
    for _, text in ipairs(ws.sent) do
        local m = assert(json.decode(text))
        if m.type == typ then out[#out + 1] = m end
    end
    return out
end

-- The newest timer the watcher started (the stub numbers them).
local function last_timer()
    local id = 0
    for k in pairs(stubs.timers) do if k > id then id = k end end
    return id
end

local function watcher(list, inputs)
    local c, ws = ready_client()
    local rs = { getAnalogInput = function(side) return inputs and inputs[side] or 0 end }
    local checked, problems = triggers.from_list(list)
    t.eq(#problems, 0, "problems: " .. table.concat(problems, "; "))
    return triggers.new(c, checked, { redstone = rs }), ws, c
end

t.test("the file's mistakes are reported one by one, the good triggers kept", function()
    local list, problems = triggers.from_list({
        { name = "ok", on = "redstone", agent = "t1" },
        { name = "bad kind", on = "redstone", agent = "t1" },
        { name = "noway", on = "sunrise", agent = "t1" },
        { name = "both", on = "timer", every = 5, agent = "t1", task = { prompt = "x" } },
        { name = "neither", on = "timer", every = 5 },
        { name = "slow", on = "timer", every = 0.5, agent = "t1" },
        { name = "radio", on = "rednet", agent = "t1" },
        { name = "tpl", on = "peripheral", task = { prompt = "" } },
        { name = "ok", on = "chat", agent = "t2" },
        { name = "neg", on = "chat", agent = "t2", debounce = -1 },
        "not a table",
    })
    t.eq(#list, 1)
    t.eq(list[1].name, "ok")
    t.eq(list[1].debounce, 1, "redstone's default debounce")
    t.eq(#problems, 10)
    t.truthy(problems[1]:find("name must be"), problems[1])
    t.truthy(problems[2]:find("on must be one of"), problems[2])
    t.truthy(problems[3]:find("either agent"), problems[3])
    t.truthy(problems[5]:find("every"), problems[5])
    t.truthy(problems[6]:find("protocol"), problems[6])
    t.truthy(problems[7]:find("prompt"), problems[7])
    t.truthy(problems[8]:find("comes earlier"), problems[8])
    t.truthy(problems[9]:find("debounce"), problems[9])
    local _, notlist = triggers.from_list("nope")
    t.truthy(notlist[1]:find("list of triggers"))
end)

t.test("a flickering redstone line sends one change after the quiet period, or none when it ends where it was " ..
    "(guards: a flicker flooding the server)", function()
    local inputs = { back = 0 }
    local w, ws = watcher({ { name = "crops", on = "redstone", side = "back", debounce = 2, agent = "task-9" } },
        inputs)
    for _, level in ipairs({ 15, 0, 15, 0, 15 }) do
        inputs.back = level
        w:handle_event("redstone")
    end
    t.eq(#sent(ws, "task_event"), 0, "nothing while it bounces")
    local timer = last_timer()
    t.eq(stubs.timers[timer], 2)
    w:handle_event("timer", timer)
    local evs = sent(ws, "task_event")
    t.eq(#evs, 1)
    t.same(evs[1].data, { side = "back", on = true, level = 15 })
    t.eq(evs[1].trigger, "crops")
    t.eq(evs[1].agent, "task-9")
    t.eq(evs[1].task_id, nil)
    t.eq(evs[1].name, "redstone")
    -- bounces back to on: nothing
    inputs.back = 0
    w:handle_event("redstone")
    inputs.back = 15
    w:handle_event("redstone")
    w:handle_event("timer", last_timer())
    t.eq(#sent(ws, "task_event"), 1, "a flicker that ends where it was sends nothing")
    t.eq(w.sent.crops, 1)
end)

t.test("a cancelled quiet period's timer fires nothing (the stub records the cancel)", function()
    local inputs = { back = 0 }
    local w, ws = watcher({ { name = "crops", on = "redstone", debounce = 1, agent = "task-9" } }, inputs)
    inputs.back = 7
    w:handle_event("redstone")
    local first = last_timer()
    w:handle_event("redstone")
    t.truthy(stubs.cancelled[first], "the first quiet period was cancelled")
    w:handle_event("timer", first)
    t.eq(#sent(ws, "task_event"), 0)
    w:handle_event("timer", last_timer())
    t.same(sent(ws, "task_event")[1].data, { side = "back", on = true, level = 7 })
end)

t.test("rednet on the configured protocol only; chat matching the pattern only; when filters", function()
    local w, ws = watcher({
        { name = "radio", on = "rednet", protocol = "farm", agent = "t1", event = "farm_message" },
        { name = "words", on = "chat", pattern = "^harvest", agent = "t1" },
        { name = "door", on = "peripheral", side = "left", agent = "t1", when = function(d) return d.side end },
    })
    w:handle_event("rednet_message", 5, "hi", "other")
    w:handle_event("rednet_message", 5, { crop = "wheat" }, "farm")
    w:handle_event("chat", "Alex", "hello")
    w:handle_event("chat", "Steve", "harvest please", "uuid", true)
    w:handle_event("peripheral", "right")
    w:handle_event("peripheral", "left")
    local evs = sent(ws, "task_event")
    t.eq(#evs, 3)
    t.eq(evs[1].name, "farm_message")
    t.same(evs[1].data, { sender = 5, message = { crop = "wheat" }, protocol = "farm" })
    t.same(evs[2].data, { player = "Steve", message = "harvest please", hidden = true })
    t.same(evs[3].data, { side = "left" })
end)

t.test("a template trigger creates a task with the event in its prompt and context, naming the trigger", function()
    local w, ws = watcher({ { name = "visitor", on = "monitor_touch", debounce = 0,
        task = { prompt = "Someone is at the gate.", kind = "general_agent", client_id = "gatehouse",
            settings = { temperature = 0.1 } } } })
    w:handle_event("monitor_touch", "monitor_1", 3, 2)
    local ct = sent(ws, "create_task")
    t.eq(#ct, 1)
    t.eq(ct[1].task_kind, "general_agent")
    t.eq(ct[1].client_id, "gatehouse")
    t.eq(ct[1].trigger, "visitor")
    t.same(ct[1].settings, { temperature = 0.1 })
    t.same(ct[1].context, { trigger = "visitor", event = "monitor_touch",
        data = { monitor = "monitor_1", x = 3, y = 2 } })
    t.truthy(ct[1].prompt:find("^Someone is at the gate%.\n\nTrigger visitor %(monitor_touch%): {"), ct[1].prompt)
end)

t.test("a timer trigger fires every period and starts the next one", function()
    local w, ws = watcher({ { name = "tick", on = "timer", every = 30, agent = "t1" } })
    local first = last_timer()
    t.eq(stubs.timers[first], 30)
    w:handle_event("timer", first)
    t.eq(#sent(ws, "task_event"), 1)
    t.truthy(last_timer() > first, "the next period started")
    w:handle_event("timer", first)
    t.eq(#sent(ws, "task_event"), 1, "a spent timer id fires nothing")
end)

t.test("a `when` that raises is logged and sends nothing", function()
    local c = ready_client()
    local logged = {}
    local list = triggers.from_list({ { name = "x", on = "chat", agent = "t1", when = function() error("boom") end } })
    local w = triggers.new(c, list, { log = function(_, m) logged[#logged + 1] = m end })
    w:handle_event("chat", "a", "b")
    t.truthy(logged[1] and logged[1]:find("boom"), "logged")
    t.eq(w.sent.x, 0)
end)

t.test("describe says what a trigger watches and where it goes", function()
    local list = triggers.from_list({
        { name = "crops", on = "redstone", side = "back", agent = "t-1" },
        { name = "tick", on = "timer", every = 60, task = { prompt = "Check the farm.", kind = "code_job" } },
    })
    t.eq(triggers.describe(list[1]), "crops: redstone back -> event 'redstone' to agent t-1 (debounce 1s)")
    t.eq(triggers.describe(list[2]), "tick: timer every 60s -> new code_job: Check the farm.")
end)

t.test("a trigger names its agent: the name goes as task_event.agent for the server to resolve (no task id needed)",
    function()
    local w, ws = watcher({ { name = "words", on = "chat", agent = "farm-watcher", event = "harvest_now" } })
    w:handle_event("chat", "Steve", "harvest")
    local ev = sent(ws, "task_event")[1]
    t.eq(ev.agent, "farm-watcher")
    t.eq(ev.task_id, nil)
    t.eq(ev.name, "harvest_now")
    t.eq(ev.trigger, "words")
    local list, problems = triggers.from_list({ { name = "x", on = "chat", agent = 7 } })
    t.eq(#list, 0)
    t.truthy(problems[1]:find("agent must be a task name or id"), problems[1])
end)

t.test("create_task carries the task's name; agent_event sends by name", function()
    local c, ws = ready_client()
    c:create_task({ prompt = "p", kind = "resident_agent", name = "farm-watcher" })
    t.eq(sent(ws, "create_task")[1].name, "farm-watcher")
    t.raises(function() c:create_task({ prompt = "p", name = 5 }) end, "name")
    c:agent_event("farm-watcher", "tick", { n = 1 })
    local ev = sent(ws, "task_event")[1]
    t.eq(ev.agent, "farm-watcher")
    t.eq(ev.task_id, nil)
    t.same(ev.data, { n = 1 })
    t.raises(function() c:agent_event(nil, "tick") end, "bad argument")
end)

t.test("create_task passes per-task settings and refuses an unknown or mistyped one where it is called", function()
    local c, ws = ready_client()
    c:create_task({ prompt = "p", kind = "code_job", settings = { models = { planner = "qwen3:8b" },
        temperature = 0.3, budgets = { max_steps = 12 } } })
    local ct = sent(ws, "create_task")[1]
    t.same(ct.settings, { models = { planner = "qwen3:8b" }, temperature = 0.3, budgets = { max_steps = 12 } })
    t.raises(function() c:create_task({ prompt = "p", settings = { temprature = 1 } }) end, "bad setting 'temprature'")
    t.raises(function() c:create_task({ prompt = "p", settings = { temperature = "hot" } }) end,
        "number expected")
    t.eq(#sent(ws, "create_task"), 1, "nothing sent for a bad call")
end)

t.test("the welcome's offer (kinds, models, roles) is kept for the menus", function()
    stubs.reset()
    local c = ccagent.connect(URL, { client_id = "farm" })
    c:open()
    c:handle_event("websocket_success", URL, stubs.socket())
    c:handle_event("websocket_message", URL, assert(json.encode({ type = "welcome", client_id = "farm",
        server_version = "1", protocol_version = 1, heartbeat_ms = 0, max_message_bytes = 131072,
        task_kinds = { "general_agent", "code_job" }, models = { "a", "b" },
        model_roles = { code_job = { "planner", "executor" } } })))
    t.same(c.task_kinds, { "general_agent", "code_job" })
    t.same(c.models, { "a", "b" })
    t.same(c.model_roles.code_job, { "planner", "executor" })
end)

t.done()
