--- Configuration shared by the ccagent programs: `/.ccagent/config.json` plus command-line flags.
--
-- The installer writes `{server_url, ws_url, token?, client_id?}`. Optional keys: `sandbox` (root for the
-- file tools), `tools_dir` (default `/tools`), `state_dir` (default `/.ccagent/state`), `kind` (task kind the
-- `ccagent` program creates, default `general_agent`), `triggers_file` (the in-game triggers, default
-- `/.ccagent/triggers.lua`, see @{ccagent.triggers}), `screen` (mirror the screen to the dashboard, see
-- @{ccagent.screen}; default the CC setting `ccagent.screen`, off).
--
-- @module ccagent.config
local json = require "ccagent.json"

local M = {}

--- Where the installer writes the configuration.
M.PATH = "/.ccagent/config.json"

--- Where unacknowledged command results survive a reboot.
M.STATE_DIR = "/.ccagent/state"

--- Usage line for the flags @{parse_args} accepts.
M.USAGE = "[ws://host:port/ws[,ws://other:port/ws...]] [--id NAME] [--token T] [--sandbox DIR] [--tools DIR] "
    .. "[--state DIR] "
    .. "[--kind KIND] [--config FILE] [--triggers FILE] [--screen] [--quiet]"

--- Derive the WebSocket URL from the orchestrator's HTTP URL (`http://h:p` → `ws://h:p/ws`). Several URLs
-- separated by commas (orchestrators sharing one database) give several, separated by commas.
-- @tparam string server_url
-- @treturn string
function M.ws_url(server_url)
    local out = {}
    for one in server_url:gmatch("[^,%s]+") do
        local base = one:gsub("/+$", "")
        out[#out + 1] = (base:gsub("^http", "ws")) .. "/ws"
    end
    return table.concat(out, ",")
end

--- True when every comma-separated URL of `urls` is a WebSocket URL (and there is at least one).
local function ws_urls_ok(urls)
    if type(urls) ~= "string" then return false end
    local n = 0
    for u in urls:gmatch("[^,%s]+") do
        if not u:find("^wss?://") then return false end
        n = n + 1
    end
    return n > 0
end

--- Read a configuration file.
-- @tparam[opt] string path (default @{PATH})
-- @treturn[1] table the settings (empty when the file does not exist)
-- @treturn[2] nil
-- @treturn[2] string why the file cannot be used
function M.read(path)
    path = path or M.PATH
    if not fs.exists(path) then return {} end
    local h = fs.open(path, "r")
    if not h then return nil, "cannot open " .. path end
    local text = h.readAll() or ""
    h.close()
    local cfg, err = json.decode(text)
    if type(cfg) ~= "table" or json.is_array(cfg) then return nil, path .. ": " .. tostring(err or "not an object") end
    return cfg
end

local VALUE_FLAGS = {
    ["--id"] = "client_id", ["--token"] = "token", ["--sandbox"] = "sandbox", ["--tools"] = "tools_dir",
    ["--state"] = "state_dir", ["--kind"] = "kind", ["--config"] = "config",
    ["--triggers"] = "triggers_file",
}
local BOOLEAN_FLAGS = { ["--quiet"] = "quiet", ["--screen"] = "screen" }

--- Parse the programs' command line (see @{USAGE}).
-- @tparam {string...} argv
-- @treturn[1] table the flags given
-- @treturn[2] nil
-- @treturn[2] string usage error
function M.parse_args(argv)
    local out, i = {}, 1
    while i <= #argv do
        local a = argv[i]
        if VALUE_FLAGS[a] then
            if argv[i + 1] == nil then return nil, a .. " needs a value" end
            out[VALUE_FLAGS[a]] = argv[i + 1]
            i = i + 2
        elseif BOOLEAN_FLAGS[a] then
            out[BOOLEAN_FLAGS[a]] = true
            i = i + 1
        elseif a:sub(1, 2) == "--" then
            return nil, "unknown option " .. a
        elseif out.ws_url then
            return nil, "unexpected argument " .. a
        else
            out.ws_url = a
            i = i + 1
        end
    end
    return out
end

--- Merge the config file and the flags (flags win), fill in defaults and check a server URL is known.
-- @tparam {string...} argv
-- @treturn[1] table settings with `ws_url` and `state_dir` set
-- @treturn[2] nil
-- @treturn[2] string what is wrong
function M.resolve(argv)
    local flags, err = M.parse_args(argv)
    if not flags then return nil, err end
    local cfg, cerr = M.read(flags.config)
    if not cfg then return nil, cerr end
    for k, v in pairs(flags) do cfg[k] = v end
    if not cfg.ws_url and type(cfg.server_url) == "string" then cfg.ws_url = M.ws_url(cfg.server_url) end
    if not ws_urls_ok(cfg.ws_url) then
        return nil, "no server: run the installer, or pass ws://host:port/ws (several: ws://a/ws,ws://b/ws)"
    end
    cfg.state_dir = cfg.state_dir or M.STATE_DIR
    cfg.kind = cfg.kind or "general_agent"
    return cfg
end

return M
