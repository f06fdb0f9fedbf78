--- One connection per computer: the client and agent host a ccagent program started, shared with the others.
--
-- The orchestrator keeps one connection per client id (a second one replaces the first), so the `ccagent`
-- terminal program attaches to a host already running in another tab, or beside the shell, instead of
-- opening a rival connection. The running session is kept in `_G` (shared by every program on the computer).
--
-- @module ccagent.session
local ccagent = require "ccagent"
local host_mod = require "ccagent.host"
local triggers_mod = require "ccagent.triggers"
local screen_mod = require "ccagent.screen"

local M = {}

local KEY = "ccagent_session"

--- The session a program on this computer is running, if any.
-- @treturn table|nil `{client, host, cfg}`
function M.current()
    local s = rawget(_G, KEY)
    if type(s) == "table" and s.client and s.client.state ~= "stopped" then return s end
    return nil
end

--- Create a client and its agent host from resolved settings (see @{ccagent.config.resolve}).
-- @tparam table cfg settings
-- @tparam table opts `shell` (the program's shell), `log` (function(level, message))
-- The triggers file (`cfg.triggers_file`, default @{ccagent.triggers.PATH}) is loaded too: its problems join the
-- session's `problems` (as `{name = "triggers", error}`), and its triggers run beside the connection.
-- Whether the screen mirror runs is decided while the session runs, by this computer's own word (`cfg.screen`,
-- the CC setting `ccagent.screen`) and the server's (see @{ccagent.screen.enabled}); `screen_on` is the first.
-- @treturn table the session `{client, host, cfg, problems, watcher, screen_on}`
function M.create(cfg, opts)
    local client = ccagent.connect(cfg.ws_url, {
        client_id = cfg.client_id,
        token = cfg.token,
        state_dir = cfg.state_dir,
        log = opts.log,
    })
    local host, tool_problems = host_mod.new(client, { shell = opts.shell, root = cfg.sandbox,
        tools_dir = cfg.tools_dir })
    local problems = {}
    for i, p in ipairs(tool_problems or {}) do problems[i] = p end
    local list, terrs = triggers_mod.load(cfg.triggers_file)
    for _, e in ipairs(terrs) do problems[#problems + 1] = { name = "triggers", error = e } end
    local watcher = #list > 0 and triggers_mod.new(client, list, { log = opts.log }) or nil
    return { client = client, host = host, cfg = cfg, problems = problems, watcher = watcher,
        screen_on = screen_mod.enabled(cfg) }
end

--- Run the screen mirror while it is on, on and off as the server's word changes (no reboot): it wraps the real
-- screen only while on. This computer's own off wins whatever the server says (see @{ccagent.screen.enabled}).
-- @tparam table session
function M.run_screen(session)
    local client = session.client
    local function on() return screen_mod.enabled(session.cfg, client.screen_server) end
    while client.state ~= "stopped" do
        if on() then
            session.screen = session.screen or screen_mod.new(term.native())
            session.screen:run(client, on)
        end
        if session.screen then
            session.screen:uninstall()
            session.screen = nil
        end
        if client.state ~= "stopped" then os.pullEvent("ccagent_screen_switch") end
    end
end

--- Run a session's connection until it stops, announcing it to the other programs meanwhile.
-- @tparam table session
function M.run(session)
    rawset(_G, KEY, session)
    local ok, err = pcall(function()
        local jobs = { function() session.client:run() end, function() M.run_screen(session) end }
        if session.watcher then jobs[#jobs + 1] = function() session.watcher:run() end end
        parallel.waitForAny(table.unpack(jobs))
    end)
    if session.screen then
        session.screen:uninstall()
        session.screen = nil
    end
    if rawget(_G, KEY) == session then rawset(_G, KEY, nil) end
    if not ok then error(err, 0) end
end

return M
