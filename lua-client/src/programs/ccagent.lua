-- ccagent: give the orchestrator tasks from this computer's terminal, watch them run, answer their questions.
-- usage: ccagent [ws://host:port/ws] [--id NAME] [--token T] [--kind KIND] [--sandbox DIR] [--config FILE]
-- Type a task and press Enter. While a task asks a question, the next line you type is the answer.
-- Commands: /tasks, /cancel <task id>, /msg <task id> <text>, /help, /quit.
-- When ccagent-host already runs on this computer (another tab, or started at boot), this program uses its
-- connection; otherwise it connects itself and serves the computer's tools while it runs.
local root = fs.getDir(fs.getDir(shell.getRunningProgram()))
local prefix = root == "" and "/" or "/" .. root .. "/"
package.path = prefix .. "?.lua;" .. prefix .. "?/init.lua;" .. package.path

local config = require "ccagent.config"
local session_mod = require "ccagent.session"
local json = require "ccagent.json"

local flags, ferr = config.parse_args({ ... })
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
    "/quit           leave",
}

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
    elseif line:sub(1, 1) == "/" then
        log("unknown command " .. line .. " (try /help)", colours.red)
    elseif #questions > 0 then
        local q = table.remove(questions, 1)
        client:answer(q.task_id, q.question_id, line)
        log(("[%s] you: %s"):format(short(q.task_id), line))
        draw_header()
    else
        log("> " .. line, colours.lightBlue)
        client:create_task({
            prompt = line,
            kind = kind,
            on_created = function(task_id, status, message)
                if task_id then
                    log(("[%s] created (%s)"):format(short(task_id), tostring(status)), colours.grey)
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
