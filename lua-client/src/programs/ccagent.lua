-- ccagent: give the orchestrator tasks from this computer's terminal, watch them run, answer their questions.
-- usage: ccagent [ws://host:port/ws] [--id NAME] [--token T] [--kind KIND] [--sandbox DIR] [--config FILE]
--        ccagent triggers [--triggers FILE] [--config FILE]   (list this computer's in-game triggers)
-- Type a task and press Enter. While a task asks a question, the next line you type is the answer.
-- Commands: /tasks, /cancel <task id>, /msg <task id> <text>, /kind, /model, /set, /on <computer>, /name <name>,
-- /help, /quit.
-- When ccagent-host already runs on this computer (another tab, or started at boot), this program uses its
-- connection; otherwise it connects itself and serves the computer's tools while it runs.
local root = fs.getDir(fs.getDir(shell.getRunningProgram()))
local prefix = root == "" and "/" or "/" .. root .. "/"
package.path = prefix .. "?.lua;" .. prefix .. "?/init.lua;" .. package.path

local config = require "ccagent.config"
local session_mod = require "ccagent.session"
local json = require "ccagent.json"

local argv = { ... }
if argv[1] == "triggers" then
    -- `ccagent triggers`: what the triggers file says, and how often each fired in the running host.
    local triggers_mod = require "ccagent.triggers"
    local tflags, terr = config.parse_args({ table.unpack(argv, 2) })
    if not tflags then
        printError(terr)
        return
    end
    local cfg = config.read(tflags.config) or {}
    local path = tflags.triggers_file or cfg.triggers_file or triggers_mod.PATH
    local list, problems = triggers_mod.load(path)
    local running = session_mod.current()
    local sent = running and running.watcher and running.watcher.sent or {}
    print(("%d trigger(s) in %s"):format(#list, path))
    for _, t in ipairs(list) do
        local line = triggers_mod.describe(t)
        if sent[t.name] then line = line .. (" [sent %d]"):format(sent[t.name]) end
        print(line)
    end
    for _, p in ipairs(problems) do printError(p) end
    if not fs.exists(path) then print("none: write " .. path .. " (see docs/agents.md)") end
    return
end

local flags, ferr = config.parse_args(argv)
if not flags then
    printError(ferr)
    print("usage: ccagent " .. config.USAGE)
    return
end

local native = term.current()
local width, height = native.getSize()
local header = window.create(native, 1, 1, width, 1)
local log_win = window.create(native, 1, 2, width, height - 2)
local input_win = window.create(native, 1, height, width, 1)
local colour = native.isColour()

-- The task whose streamed reply is being written on the last line of the log, if any.
local streaming

local function log(text, fg)
    local prev = term.redirect(log_win)
    if streaming then
        print()
        streaming = nil
    end
    if colour and fg then term.setTextColour(fg) end
    print(text)
    term.setTextColour(colours.white)
    term.redirect(prev)
    input_win.restoreCursor()
end

local session = session_mod.current()
local own = session == nil
if own then
    local cfg, err = config.resolve({ ... })
    if not cfg then
        printError(err)
        print("usage: ccagent " .. config.USAGE)
        return
    end
    session = session_mod.create(cfg, {
        shell = shell,
        log = function(level, msg)
            if level == "warn" or level == "error" then log(msg, colours.grey) end
        end,
    })
end
local client = session.client
local kind = flags.kind or (session.cfg and session.cfg.kind) or "general_agent"
-- Per-task settings chosen with /model and /set (checked by the server against the operator's maximums).
local model
local chosen = {}
-- Where new tasks run: this computer, or another of its group (/on).
local target
-- The name the next task gets (`/name`), then cleared: names address one running agent each.
local next_name

local questions = {}
local last_seen = {}
-- Tasks whose reply was streamed (their result message is not printed again).
local streamed = {}

local function short(id)
    return tostring(id):sub(1, 8)
end

local function draw_header()
    header.setBackgroundColour(colour and colours.blue or colours.grey)
    header.setTextColour(colours.white)
    header.clear()
    header.setCursorPos(1, 1)
    local state = client:is_connected() and "online" or "offline"
    local text = ("ccagent %s [%s]"):format(client.client_id, state)
    if #questions > 0 then text = text .. (" - answer %s's question"):format(short(questions[1].task_id)) end
    header.write(text:sub(1, width))
    input_win.restoreCursor()
end

local function describe(value)
    if type(value) == "string" then return value end
    if type(value) == "table" and type(value.message) == "string" then return value.message end
    local text = json.encode(value) or tostring(value)
    if #text > 300 then text = text:sub(1, 297) .. "..." end
    return text
end

local STATUS_COLOURS = {
    completed = colours.green, failed = colours.red, cancelled = colours.orange,
    waiting_for_user = colours.yellow,
}

local function on_task(task_id, status, t)
    t = t or client.tasks[task_id] or {}
    local key = tostring(status) .. "|" .. tostring(t.message)
    if last_seen[task_id] == key then return end
    last_seen[task_id] = key
    local line = ("[%s] %s"):format(short(task_id), tostring(status))
    if t.progress then line = line .. (" %d%%"):format(math.floor(t.progress * 100 + 0.5)) end
    if t.message and status ~= "completed" then line = line .. ": " .. t.message end
    log(line, STATUS_COLOURS[status])
    if status == "completed" and t.result ~= nil and not streamed[task_id] then
        log("  " .. describe(t.result), colours.green)
    end
    streamed[task_id] = nil
    if status == "failed" and t.error ~= nil then log("  " .. describe(t.error), colours.red) end
    if status ~= "waiting_for_user" then
        -- questions answered elsewhere (CLI, HTTP) are no longer open
        for i = #questions, 1, -1 do
            if questions[i].task_id == task_id then table.remove(questions, i) end
        end
        draw_header()
    end
end

local function events()
    while true do
        local ev, a, b, c, d = os.pullEvent()
        if ev == "ccagent_connection" then
            log(a == "connected" and "connected" or ("offline: " .. tostring(b)), colours.grey)
            draw_header()
        elseif ev == "ccagent_task" then
            on_task(a, b, c)
        elseif ev == "ccagent_delta" then
            -- A chat reply as it is written: appended to the log's last line, wrapped like print.
            local prev = term.redirect(log_win)
            if streaming ~= a then
                if streaming then print() end
                if colour then term.setTextColour(colours.lightGrey) end
                write(("[%s] "):format(short(a)))
                term.setTextColour(colours.white)
                streaming = a
            end
            write(b)
            term.redirect(prev)
            input_win.restoreCursor()
            streamed[a] = true
        elseif ev == "ccagent_question" then
            questions[#questions + 1] = { task_id = a, question_id = b, question = c, why = d }
            log(("[%s] asks: %s"):format(short(a), tostring(c)), colours.yellow)
            if d then log("  (" .. tostring(d) .. ")", colours.yellow) end
            draw_header()
        elseif ev == "ccagent_error" then
            log("error " .. tostring(a) .. ": " .. tostring(b), colours.red)
        end
    end
end

local HELP = {
    "Type a task and press Enter.",
    "When a task asks, your next line answers.",
    "/tasks          list tasks and their status",
    "/cancel <id>    cancel a task (id prefix works)",
    "/msg <id> text  tell a task something; a",
    "                finished task continues",
    "/kind [n|name]  list the kinds / pick one",
    "/model [n|name] list the models / pick one",
    "/set key [val]  temperature, num_ctx, provider,",
    "                max_steps, max_tool_calls,",
    "                max_model_calls, deadline_s",
    "/settings       show what new tasks get",
    "/on [computer]  run new tasks on another",
    "                computer of your group",
    "/name <name>    name the next task (triggers",
    "                reach it by name)",
    "/quit           leave",
}

local NUMBER_SETTINGS = { temperature = true, num_ctx = true }
local BUDGET_SETTINGS = { max_steps = true, max_tool_calls = true, max_model_calls = true, deadline_s = true }

-- The settings of a new task of `kind`: the model for each role the kind calls, and what /set chose.
local function task_settings()
    local s = {}
    if model then
        local roles = client.model_roles and client.model_roles[kind]
        if roles then
            local m = {}
            for _, r in ipairs(roles) do m[r] = model end
            s.models = m
        else
            log("the server did not say which models " .. kind .. " uses; /model is left out", colours.orange)
        end
    end
    local budgets
    for k, v in pairs(chosen) do
        if BUDGET_SETTINGS[k] then
            budgets = budgets or {}
            if k == "deadline_s" then budgets.deadline_ms = v * 1000 else budgets[k] = v end
        else
            s[k] = v
        end
    end
    s.budgets = budgets
    if next(s) == nil then return nil end
    return s
end

-- Pick `arg` (a number or a name) from `offered`; nil and a reason when it is not offered.
local function pick(arg, offered, what)
    if not offered then return arg end -- an older server: take the name as typed
    local n = tonumber(arg)
    if n and offered[n] then return offered[n] end
    for _, v in ipairs(offered) do
        if v == arg then return v end
    end
    return nil, ("no %s '%s' on this server (try /%s)"):format(what, arg, what)
end

local function list_offered(offered, current, what)
    if not offered then
        log("the server did not list its " .. what .. "s; type a name", colours.orange)
        return
    end
    for i, v in ipairs(offered) do
        log(("%2d %s%s"):format(i, v, v == current and "  <- in use" or ""), v == current and colours.lime or nil)
    end
end

local function find_task(prefix_id)
    for id in pairs(client.tasks) do
        if id:sub(1, #prefix_id) == prefix_id then return id end
    end
    return nil
end

-- Returns false to quit.
local function handle(line)
    if line == "/quit" or line == "/exit" then return false end
    if line == "/help" then
        for _, l in ipairs(HELP) do log(l) end
    elseif line == "/tasks" then
        local any = false
        for id, t in pairs(client.tasks) do
            any = true
            log(("[%s] %s %s"):format(short(id), tostring(t.status), t.prompt and ("- " .. t.prompt) or ""))
        end
        if not any then log("no tasks yet") end
    elseif line:find("^/cancel") then
        local id = line:match("^/cancel%s+(%S+)")
        local full = id and find_task(id)
        if full then
            client:cancel(full)
            log("cancelling " .. short(full))
        else
            log("usage: /cancel <task id>", colours.red)
        end
    elseif line:find("^/msg") then
        local id, text = line:match("^/msg%s+(%S+)%s+(.+)$")
        local full = id and find_task(id)
        if full then
            client:message(full, text)
            log(("[%s] you: %s"):format(short(full), text), colours.lightBlue)
            last_seen[full] = nil
        else
            log("usage: /msg <task id> <text>", colours.red)
        end
    elseif line == "/kind" or line == "/kinds" then
        list_offered(client.task_kinds, kind, "kind")
    elseif line:find("^/kind%s") then
        local picked, why = pick(line:match("^/kind%s+(%S+)"), client.task_kinds, "kind")
        if picked then
            kind = picked
            log("new tasks: " .. kind, colours.lime)
        else
            log(why, colours.red)
        end
    elseif line == "/model" or line == "/models" then
        list_offered(client.models, model, "model")
    elseif line:find("^/model%s") then
        local arg = line:match("^/model%s+(%S+)")
        local picked, why = pick(arg, client.models, "model")
        if arg == "default" then
            model = nil
            log("new tasks: the kind's own models", colours.lime)
        elseif picked then
            model = picked
            log("new tasks: model " .. model, colours.lime)
        else
            log(why, colours.red)
        end
    elseif line == "/set" or line:find("^/set%s") then
        local key, value = line:match("^/set%s+(%S+)%s*(%S*)$")
        if not key or not (NUMBER_SETTINGS[key] or BUDGET_SETTINGS[key] or key == "provider") then
            log("usage: /set temperature|num_ctx|provider|max_steps|max_tool_calls|max_model_calls|deadline_s "
                .. "[value]", colours.red)
        elseif value == "" then
            chosen[key] = nil
            log(key .. ": the kind's default", colours.lime)
        elseif key ~= "provider" and not tonumber(value) then
            log(key .. " takes a number", colours.red)
        else
            chosen[key] = key == "provider" and value or tonumber(value)
            log(("%s = %s"):format(key, tostring(chosen[key])), colours.lime)
        end
    elseif line == "/settings" then
        log(("kind %s on %s"):format(kind, target or client.client_id))
        log("settings: " .. (json.encode(task_settings() or json.object()) or "{}"))
    elseif line == "/on" or line:find("^/on%s") then
        target = line:match("^/on%s+(%S+)")
        log("new tasks run on " .. (target or client.client_id), colours.lime)
    elseif line == "/name" or line:find("^/name%s") then
        local name = line:match("^/name%s+(%S+)%s*$")
        if name and name:find("^[A-Za-z0-9%._:@%+%-]+$") and #name <= 100 then
            next_name = name
            log("the next task is named " .. name, colours.lime)
        else
            log("usage: /name <name> (letters, digits and . _ - : @ +)", colours.red)
        end
    elseif line:sub(1, 1) == "/" then
        log("unknown command " .. line .. " (try /help)", colours.red)
    elseif #questions > 0 then
        local q = table.remove(questions, 1)
        client:answer(q.task_id, q.question_id, line)
        log(("[%s] you: %s"):format(short(q.task_id), line))
        draw_header()
    else
        log("> " .. line, colours.lightBlue)
        local name = next_name
        next_name = nil
        client:create_task({
            prompt = line,
            name = name,
            kind = kind,
            settings = task_settings(),
            client_id = target,
            -- the commands of the computer it runs on, not this one's
            allowed_commands = target and {} or nil,
            on_created = function(task_id, status, message)
                if task_id then
                    log(("[%s] created (%s)"):format(short(task_id), tostring(status)), colours.grey)
                    -- the whole id, for the CLI (a triggers file can use the task's /name instead)
                    log("  id " .. task_id, colours.grey)
                else
                    log(("refused: %s %s"):format(tostring(status), tostring(message)), colours.red)
                end
            end,
        })
    end
    return true
end

local function input()
    local history = {}
    while true do
        term.redirect(input_win)
        input_win.setBackgroundColour(colours.black)
        input_win.clear()
        input_win.setCursorPos(1, 1)
        input_win.setTextColour(colours.yellow)
        input_win.write("> ")
        input_win.setTextColour(colours.white)
        local line = read(nil, history)
        term.redirect(native)
        line = line and line:gsub("^%s+", ""):gsub("%s+$", "") or ""
        if line ~= "" then
            if history[#history] ~= line then history[#history + 1] = line end
            if not handle(line) then return end
        end
    end
end

native.setBackgroundColour(colours.black)
native.clear()
draw_header()
log(own and ("connecting to " .. session.cfg.ws_url) or "using the running ccagent-host connection", colours.grey)
log("Type a task, or /help.", colours.grey)
for _, p in ipairs(session.problems or {}) do
    log("tool " .. tostring(p.name) .. ": " .. tostring(p.error), colours.red)
end

local ok, err
if own then
    ok, err = pcall(parallel.waitForAny, function() session_mod.run(session) end, events, input)
    client:stop()
else
    ok, err = pcall(parallel.waitForAny, events, input)
end
term.redirect(native)
native.setBackgroundColour(colours.black)
native.setTextColour(colours.white)
native.clear()
native.setCursorPos(1, 1)
if not ok then error(err, 0) end
