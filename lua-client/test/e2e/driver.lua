-- End-to-end driver, run on a real CC:Tweaked computer (CraftOS-PC) against the real orchestrator.
--
-- It starts the real library and agent host from /ccagent (lua-client/src), then works through
-- /e2e-plan.json: every task is created through the client API (`create_task`), followed through
-- `ccagent_task` events until it ends, and its questions (`ccagent_question`) are answered with
-- `answer()` when the plan gives an answer. Afterwards it runs the plan's `after` steps on this
-- computer (shell commands, with their terminal output captured) and writes everything it saw to
-- /e2e-out.json before stopping the client. A task with `after_file` is created only once that file exists (the
-- test writes it into the computer's disk when it is ready). A task given by `task_id` is not created but
-- followed (`subscribe`), e.g. one created before this computer rebooted. A task with `target` runs on that
-- computer (one of this one's group); `settings` are its per-task settings. With `stay_until_file` the driver keeps
-- serving its tools after its own tasks until that file exists (a host other computers give work to).
--
-- Plan: { url, client_id, reconnect_min?, reconnect_max?, task_timeout? (s),
--         tasks = [{ kind?, prompt, context?, answer?, answer_after_file?, after_file? } | { task_id, ... }],
--         after = [{ delete = path } | { run = { program, arg... } }] }
package.path = "/ccagent/?.lua;/ccagent/?/init.lua;" .. package.path

local ccagent = require "ccagent"
local host_mod = require "ccagent.host"
local capture = require "ccagent.capture"
local json = ccagent.json

local function read_json(path)
    local h = assert(fs.open(path, "r"), "cannot open " .. path)
    local text = h.readAll()
    h.close()
    return assert(json.decode(text))
end

local plan = read_json("/e2e-plan.json")
local client = ccagent.connect(plan.url, {
    client_id = plan.client_id,
    state_dir = "/.ccagent/state",
    reconnect_min = plan.reconnect_min,
    reconnect_max = plan.reconnect_max,
})
local host, problems = host_mod.new(client, { shell = shell })

local out = {
    tasks = json.array(),
    after = json.array(),
    connections = json.array(),
    errors = json.array(),
    problems = problems or json.array(),
}

local function save()
    local h = fs.open("/e2e-out.json", "w")
    h.write(assert(json.encode(out)))
    h.close()
end

-- Connection changes and server errors, as the client reports them to programs.
local function watch()
    while true do
        local ev, a, b = os.pullEvent()
        if ev == "ccagent_connection" then
            out.connections[#out.connections + 1] = a
        elseif ev == "ccagent_error" then
            out.errors[#out.errors + 1] = { code = a, message = b }
        end
    end
end

local function wait_for_file(path)
    while not fs.exists(path) do sleep(0.1) end
end

local function run_task(spec)
    if spec.after_file then wait_for_file(spec.after_file) end
    local rec = { prompt = spec.prompt, statuses = json.array(), questions = json.array() }
    out.tasks[#out.tasks + 1] = rec
    local id = spec.task_id
    if id then
        client:subscribe(id)
    else
        client:create_task({
            kind = spec.kind,
            prompt = spec.prompt,
            context = spec.context,
            client_id = spec.target,
            settings = spec.settings,
            on_created = function(task_id, status, message)
                if task_id then
                    id = task_id
                else
                    rec.refused = { code = status, message = message }
                end
            end,
        })
    end
    -- Questions are answered once each (a question re-sent after a reconnect is recorded again, not re-answered),
    -- and with `answer_after_file` only once that file exists.
    local unanswered, answered = {}, {}
    local function answer_due()
        if not spec.answer or (spec.answer_after_file and not fs.exists(spec.answer_after_file)) then return end
        for qid in pairs(unanswered) do
            client:answer(qid, spec.answer)
            answered[qid], unanswered[qid] = true, nil
        end
    end
    local deadline = os.startTimer(plan.task_timeout or 60)
    local poll = os.startTimer(0.1)
    while not rec.refused do
        local ev, a, b, c, d = os.pullEvent()
        if ev == "timer" and a == deadline then
            rec.timed_out = true
            break
        elseif ev == "timer" and a == poll then
            answer_due()
            poll = os.startTimer(0.1)
        elseif ev == "ccagent_task" and a == id then
            if rec.statuses[#rec.statuses] ~= b then rec.statuses[#rec.statuses + 1] = b end
            if b == "completed" or b == "failed" or b == "cancelled" then break end
        elseif ev == "ccagent_question" and a == id then
            rec.questions[#rec.questions + 1] = { question_id = b, question = c, why = d }
            if not answered[b] then unanswered[b] = true end
            answer_due()
        end
    end
    os.cancelTimer(poll)
    os.cancelTimer(deadline)
    rec.id = id
    local t = id and client.tasks[id]
    if t then rec.status, rec.result, rec.error = t.status, t.result, t.error end
    return rec
end

local function after(step)
    if step.delete then
        fs.delete(step.delete)
        out.after[#out.after + 1] = { delete = step.delete }
    elseif step.run then
        local ran, output, ok = capture.run(function()
            return shell.execute(table.unpack(step.run))
        end)
        out.after[#out.after + 1] = { run = step.run, ran = ran, ok = ok == true, output = output }
    end
end

local function app()
    for _, spec in ipairs(plan.tasks or {}) do
        run_task(spec)
        save()
    end
    for _, step in ipairs(plan.after or {}) do after(step) end
    if plan.stay_until_file then wait_for_file(plan.stay_until_file) end
    out.tools = host.registry:list()
    save()
    client:stop()
end

parallel.waitForAny(function() client:run() end, app, watch)
