-- ccagent-host: connect this computer to the ccagent orchestrator and serve its tools until terminated.
-- usage: ccagent-host [ws://host:port/ws] [--id NAME] [--token T] [--sandbox DIR] [--tools DIR] [--state DIR]
--                     [--config FILE] [--quiet]
-- Settings come from /.ccagent/config.json (written by the installer); flags override them.
local root = fs.getDir(fs.getDir(shell.getRunningProgram()))
local prefix = root == "" and "/" or "/" .. root .. "/"
package.path = prefix .. "?.lua;" .. prefix .. "?/init.lua;" .. package.path

local config = require "ccagent.config"
local session_mod = require "ccagent.session"
local ccagent = require "ccagent"

local cfg, err = config.resolve({ ... })
if not cfg then
    printError(err)
    print("usage: ccagent-host " .. config.USAGE)
    return
end
if session_mod.current() then
    printError("ccagent is already running on this computer")
    return
end

local say = cfg.quiet and function() end or print
local session = session_mod.create(cfg, {
    shell = shell,
    log = function(level, msg)
        if level == "warn" or level == "error" then say("[" .. level .. "] " .. msg) end
    end,
})
local client = session.client
say(("ccagent-host %s as %s -> %s"):format(ccagent.VERSION, client.client_id, cfg.ws_url))
for _, p in ipairs(session.problems or {}) do
    if not cfg.quiet then printError("tool " .. tostring(p.name) .. ": " .. tostring(p.error)) end
end

local function status()
    while true do
        local ev, a, b = os.pullEvent()
        if ev == "ccagent_connection" then
            say(a == "connected" and "connected" or ("disconnected: " .. tostring(b)))
        elseif ev == "ccagent_command" then
            say(("call %s %s"):format(tostring(a), b and "ok" or "failed"))
        end
    end
end

parallel.waitForAny(function() session_mod.run(session) end, status)
