-- Registry parsing and lifecycle rules of model-written tools (ccagent.tools) over an in-memory fs.
local t = require "helper"
local json = require "ccagent.json"
local tools = require "ccagent.tools"
local memfs = require "memfs"

local clock = 0
local function registry()
    local fs = memfs.new()
    local r = tools.open({ dir = "/tools", fs = fs, now = function() clock = clock + 1 return clock end })
    r:load()
    return r, fs
end

local CODE_V1 = "return { run = function(args) return { v = 1, x = args.x } end }"
local CODE_V2 = "return function(args) return { v = 2 } end"

local function names(list)
    local out = {}
    for i, s in ipairs(list) do out[i] = s.name .. "@" .. s.version end
    return out
end

t.test("parse keeps valid entries and reports invalid ones without failing", function()
    local entries, problems = tools.parse(json.encode({
        good = { file = "good.lua", status = "active", version = 1, description = "d" },
        ["Bad-Name"] = { file = "x.lua", status = "active", version = 1 },
        nofile = { status = "draft", version = 1 },
        weird = { file = "w.lua", status = "enabled", version = 1 },
        badver = { file = "v.lua", status = "draft", version = 0 },
    }))
    t.truthy(entries.good, "good kept")
    t.eq(entries.nofile, nil)
    t.eq(#problems, 4)
    t.same(entries.good.history, json.array(), "history defaults to []")
end)

t.test("parse of a non-object or corrupt registry reports it and yields no tools", function()
    local e1, p1 = tools.parse("[1,2]")
    t.eq(next(e1), nil)
    t.eq(#p1, 1)
    local e2, p2 = tools.parse("{not json")
    t.eq(next(e2), nil)
    t.truthy(p2[1]:find("not a JSON object"), p2[1])
end)

t.test("a corrupt registry file is kept as .corrupt, not silently overwritten", function()
    local fs = memfs.new()
    fs.files["tools/registry.json"] = "{oops"
    local r = tools.open({ dir = "/tools", fs = fs })
    local problems = r:load()
    t.truthy(problems[1]:find("kept as"), problems[1])
    t.eq(fs.files["tools/registry.json.corrupt"], "{oops")
end)

t.test("names must be lower-case identifiers and not built-in commands", function()
    t.truthy(tools.valid_name("dig_tunnel2"))
    t.truthy(not tools.valid_name("Dig"))
    t.truthy(not tools.valid_name("2dig"))
    t.truthy(not tools.valid_name(("a"):rep(65)))
    local r = registry()
    r.reserved = { fs_read = true }
    local s, err = r:create({ name = "fs_read", code = CODE_V1 })
    t.eq(s, nil)
    t.eq(err.code, "forbidden")
end)

t.test("a new tool is a draft and is not offered", function()
    local r, fs = registry()
    local s = assert(r:create({ name = "dig", code = CODE_V1, description = "Dig" }))
    t.eq(s.status, "draft")
    t.eq(s.version, 1)
    t.eq(#r:offered(), 0)
    t.eq(fs.files["tools/dig.lua"], CODE_V1)
    t.truthy(fs.files["tools/registry.json"]:find('"dig"'), "registry saved")
end)

t.test("draft cannot jump to active; test needs a passing run of that version", function()
    local r = registry()
    r:create({ name = "dig", code = CODE_V1 })
    local _, e1 = r:set_status("dig", "active")
    t.eq(e1.code, "invalid_transition")
    assert(r:set_status("dig", "test"))
    local _, e2 = r:set_status("dig", "active")
    t.truthy(e2.message:find("no passing tool_test"), e2.message)
    r:record_test("dig", false, "boom")
    t.eq(select(2, r:set_status("dig", "active")).code, "invalid_transition")
    r:record_test("dig", true)
    local s = assert(r:set_status("dig", "active"))
    t.eq(s.status, "active")
    t.same(names(r:offered()), { "dig@1" })
end)

t.test("running a draft moves it to test", function()
    local r = registry()
    r:create({ name = "dig", code = CODE_V1 })
    r:record_test("dig", true)
    t.eq(r.entries.dig.status, "test")
end)

t.test("editing an active tool keeps offering the previous version until the new one is activated", function()
    local r, fs = registry()
    r:create({ name = "dig", code = CODE_V1 })
    r:record_test("dig", true)
    r:set_status("dig", "active")
    local s = assert(r:create({ name = "dig", code = CODE_V2 }))
    t.eq(s.status, "draft")
    t.eq(s.version, 2)
    t.eq(fs.files["tools/archive/dig.v1.lua"], CODE_V1, "v1 archived")
    t.eq(fs.files["tools/dig.lua"], CODE_V2)
    local offered = r:offered()
    t.same(names(offered), { "dig@1" })
    t.eq(offered[1].file, "archive/dig.v1.lua")
    -- the passing test of v1 does not allow activating v2
    assert(r:set_status("dig", "test"))
    local refused, why = r:set_status("dig", "active")
    t.eq(refused, nil, "v2 untested")
    t.eq(why.code, "invalid_transition")
    t.truthy(why.message:find("version 2 has no passing tool_test", 1, true), why.message)
    t.same(names(r:offered()), { "dig@1" }, "still offering v1 after the refusal")
    r:record_test("dig", true)
    assert(r:set_status("dig", "active"))
    t.same(names(r:offered()), { "dig@2" })
    t.eq(r.entries.dig.previous, nil)
    t.eq(r.entries.dig.history[1].version, 1)
end)

t.test("retiring archives the file (never deletes) and stops offering it", function()
    local r, fs = registry()
    r:create({ name = "dig", code = CODE_V1 })
    r:record_test("dig", true)
    r:set_status("dig", "active")
    assert(r:set_status("dig", "retired"))
    t.eq(fs.files["tools/dig.lua"], nil)
    t.eq(fs.files["tools/archive/dig.v1.lua"], CODE_V1)
    t.eq(#r:offered(), 0)
    t.eq(select(2, r:set_status("dig", "active")).code, "invalid_transition")
    local s = assert(r:create({ name = "dig", code = CODE_V2 }))
    t.eq(s.version, 2)
    t.eq(s.status, "draft")
    t.eq(fs.files["tools/archive/dig.v1.lua"], CODE_V1, "retired version still archived")
end)

t.test("the registry survives a reload from disk", function()
    local r, fs = registry()
    r:create({ name = "dig", code = CODE_V1, args_schema = { type = "object", properties = {} } })
    r:record_test("dig", true)
    r:set_status("dig", "active")
    local r2 = tools.open({ dir = "/tools", fs = fs })
    t.eq(#r2:load(), 0)
    t.same(names(r2:offered()), { "dig@1" })
    t.truthy(fs.files["tools/registry.json"]:find('"properties":{}', 1, true), "empty schema stays an object")
end)

t.test("load_function: table with fn, bare function, syntax error, runtime error, wrong shape", function()
    local r, fs = registry()
    fs.files["tools/a.lua"] = CODE_V1
    fs.files["tools/b.lua"] = CODE_V2
    fs.files["tools/c.lua"] = "return {"
    fs.files["tools/d.lua"] = "error('nope')"
    fs.files["tools/e.lua"] = "return 42"
    t.eq(r:load_function({ file = "a.lua" })({ x = 5 }).x, 5)
    t.eq(r:load_function({ file = "b.lua" })({}).v, 2)
    local _, e1 = r:load_function({ file = "c.lua" })
    t.truthy(e1:find("syntax error"), e1)
    local _, e2 = r:load_function({ file = "d.lua" })
    t.truthy(e2:find("error while loading"), e2)
    local _, e3 = r:load_function({ file = "e.lua", fn = "go" })
    t.truthy(e3:find("function 'go'"), e3)
    local _, e4 = r:load_function({ file = "missing.lua" })
    t.truthy(e4:find("not found"), e4)
end)

t.test("set_status on an unknown tool or to an unknown status is refused", function()
    local r = registry()
    t.eq(select(2, r:set_status("ghost", "active")).code, "not_found")
    r:create({ name = "dig", code = CODE_V1 })
    t.eq(select(2, r:set_status("dig", "enabled")).code, "invalid_transition")
end)

t.test("infos() is the protocol's tool list: newest version, absolute file, updated_at moving on change", function()
    local r = registry()
    t.same(r:infos(), json.array(), "empty registry")
    r:create({ name = "dig", code = CODE_V1, description = "Dig a tunnel" })
    local i1 = r:infos()[1]
    t.same({ i1.name, i1.status, i1.version, i1.description, i1.file }, { "dig", "draft", 1, "Dig a tunnel",
        "/tools/dig.lua" })
    local created = i1.updated_at
    r:record_test("dig", true)
    local i2 = r:infos()[1]
    t.eq(i2.status, "test")
    t.truthy(i2.updated_at > created, "updated_at moved when the status changed")
    r:set_status("dig", "active")
    r:create({ name = "dig", code = CODE_V2 })
    r:create({ name = "aaa", code = CODE_V2 })
    local list = r:infos()
    t.eq(list[1].name, "aaa", "sorted by name")
    t.same({ list[2].status, list[2].version }, { "draft", 2 })
    t.eq(list[1].description, nil, "no empty description")
end)

t.test("bad create input is refused and changes nothing", function()
    local r, fs = registry()
    t.eq(select(2, r:create({ name = "dig", code = "" })).code, "invalid_args")
    t.eq(select(2, r:create({ name = "dig", code = CODE_V1, args_schema = "x" })).code, "invalid_args")
    t.eq(select(2, r:create({ name = "dig", code = CODE_V1, args_schema = json.array({ 1 }) })).code,
        "invalid_args")
    t.eq(select(2, r:create({ name = "dig", code = CODE_V1, description = 5 })).code, "invalid_args")
    t.eq(select(2, r:create({ name = "dig", code = CODE_V1, fn = "a.b" })).code, "invalid_args")
    t.eq(fs.files["tools/registry.json"], nil)
end)

t.done()
