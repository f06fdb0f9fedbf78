-- Program settings: /.ccagent/config.json (written by the installer) merged with command-line flags.
local t = require "helper"
local memfs = require "memfs"
local config = require "ccagent.config"

local function with_config(text)
    fs = memfs.new()
    if text then fs.files[".ccagent/config.json"] = text end
end

t.test("the installer's config alone is enough: ws_url, state dir and task kind get defaults", function()
    with_config('{"server_url":"http://10.0.0.5:7420","token":"s3cret"}')
    local cfg = assert(config.resolve({}))
    t.eq(cfg.ws_url, "ws://10.0.0.5:7420/ws")
    t.eq(cfg.token, "s3cret")
    t.eq(cfg.state_dir, "/.ccagent/state")
    t.eq(cfg.kind, "general_agent")
end)

t.test("flags override the file", function()
    with_config('{"ws_url":"ws://a:1/ws","client_id":"file-id"}')
    local cfg = assert(config.resolve({ "ws://b:2/ws", "--id", "flag-id", "--sandbox", "/box", "--quiet" }))
    t.same({ cfg.ws_url, cfg.client_id, cfg.sandbox, cfg.quiet }, { "ws://b:2/ws", "flag-id", "/box", true })
end)

t.test("no server anywhere, a bad flag or a broken file: a clear error", function()
    with_config(nil)
    t.truthy(select(2, config.resolve({})):find("no server"), "no server")
    t.truthy(select(2, config.resolve({ "--what" })):find("unknown option"), "unknown flag")
    t.truthy(select(2, config.resolve({ "--id" })):find("needs a value"), "missing value")
    t.truthy(select(2, config.resolve({ "ws://a/ws", "extra" })):find("unexpected argument"), "extra arg")
    t.truthy(select(2, config.resolve({ "http://a/ws" })):find("no server"), "not a ws url")
    with_config("{oops")
    t.truthy(select(2, config.resolve({})):find("config.json"), "names the broken file")
    with_config("[1]")
    t.truthy(select(2, config.resolve({})):find("not an object"), "array config")
end)

t.done()

t.test("several servers: a comma-separated ws_url or server_url is kept; one bad URL among them is refused", function()
    local cfg = assert(config.resolve({ "ws://a:7420/ws,ws://b:7420/ws", "--config", "/nope.json" }))
    t.eq(cfg.ws_url, "ws://a:7420/ws,ws://b:7420/ws")
    t.eq(config.ws_url("http://a:7420, http://b:7420/"), "ws://a:7420/ws,ws://b:7420/ws")
    local bad, err = config.resolve({ "ws://a:7420/ws,http://b:7420", "--config", "/nope.json" })
    t.eq(bad, nil)
    t.truthy(err:find("no server"), err)
end)
