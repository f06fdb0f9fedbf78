--- One connection per computer: the client and agent host a ccagent program started, shared with the others.
--
-- The orchestrator keeps one connection per client id (a second one replaces the first), so the `ccagent`
-- terminal program attaches to a host already running in another tab, or beside the shell, instead of
-- opening a rival connection. The running session is kept in `_G` (shared by every program on the computer).
--
-- @module ccagent.session
local ccagent = require "ccagent"
local host_mod = require "ccagent.host"

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
-- @treturn table the session `{client, host, cfg, problems}`
function M.create(cfg, opts)
    local client = ccagent.connect(cfg.ws_url, {
        client_id = cfg.client_id,
        token = cfg.token,
        state_dir = cfg.state_dir,
        log = opts.log,
    })
    local host, problems = host_mod.new(client, { shell = opts.shell, root = cfg.sandbox, tools_dir = cfg.tools_dir })
    return { client = client, host = host, cfg = cfg, problems = problems }
end

--- Run a session's connection until it stops, announcing it to the other programs meanwhile.
-- @tparam table session
function M.run(session)
    rawset(_G, KEY, session)
    local ok, err = pcall(session.client.run, session.client)
    if rawget(_G, KEY) == session then rawset(_G, KEY, nil) end
    if not ok then error(err, 0) end
end

return M
