-- The turtle tool pack against a double of the turtle API (test/turtle_double.lua) that answers as CC:Tweaked does.
-- Headless CraftOS-PC has no turtles: this is the only tier that runs these tools (docs/lua-client.md says so).
local t = require "helper"
local stubs = require "stubs"
local json = require "ccagent.json"
local ccagent = require "ccagent"
local turtle_tools = require "ccagent.turtle_tools"
local double = require "turtle_double"

local function pack(opts)
    local api = double.new(opts)
    local by = {}
    for _, tool in ipairs(turtle_tools.tools(api)) do by[tool.name] = tool end
    local function run(name, args) return by[name].run(args or {}) end
    return run, api.world, by
end

local function raises(fn, pattern)
    local ok, err = pcall(fn)
    t.eq(ok, false, "raised")
    t.eq(type(err), "table", "structured error")
    t.eq(err.code, "invalid_args")
    t.truthy(err.message:find(pattern), "message '" .. tostring(err.message) .. "' mentions " .. pattern)
end

t.test("offers every tool the issue lists, each with an object schema and a description", function()
    local _, _, by = pack()
    for _, name in ipairs(turtle_tools.NAMES) do
        local tool = t.truthy(by[name], name)
        t.eq(tool.args_schema.type, "object", name .. " schema")
        t.truthy(#tool.description > 20, name .. " description")
    end
    t.eq(#turtle_tools.NAMES, 11)
end)

t.test("a move goes one block and costs one fuel; a wall says blocked and nothing moves", function()
    local run, w = pack({ fuel = 5, blocks = { ["0,64,-2"] = { name = "minecraft:stone" } } })
    t.same(run("turtle_move", { direction = "forward" }), { moved = true, direction = "forward", fuel = 4 })
    t.eq(w.z, -1)
    local r = run("turtle_move", { direction = "forward" })
    t.eq(r.moved, false)
    t.eq(r.reason, "blocked")
    t.eq(r.message, "Movement obstructed")
    t.eq(r.fuel, 4)
    t.eq(w.z, -1, "did not move")
end)

t.test("without fuel a move says no_fuel; refuelling from coal makes it move again", function()
    local run, w = pack({ fuel = 0, inventory = { [1] = { name = "minecraft:coal", count = 2 } } })
    local r = run("turtle_move", { direction = "up" })
    t.eq(r.reason, "no_fuel")
    t.eq(w.y, 64)
    local f = run("turtle_refuel", { count = 1 })
    t.same(f, { refueled = true, fuel_before = 0, fuel = 80, limit = 20000 })
    t.eq(run("turtle_move", { direction = "up" }).moved, true)
    t.eq(w.y, 65)
    t.same(run("turtle_fuel"), { fuel = 79, limit = 20000 })
end)

t.test("refuel with a non-fuel item or an empty slot says why and burns nothing", function()
    local run, w = pack({ fuel = 3, inventory = { [1] = { name = "minecraft:dirt", count = 4 } } })
    local r = run("turtle_refuel")
    t.eq(r.refueled, false)
    t.eq(r.reason, "not_fuel")
    t.eq(w.inv[1].count, 4)
    run("turtle_select", { slot = 2 })
    t.eq(run("turtle_refuel").reason, "nothing_selected")
end)

t.test("a world with fuel off reports unlimited and moves freely", function()
    local run = pack({ fuel = 0, limit = "unlimited" })
    t.eq(run("turtle_move", { direction = "down" }).moved, true)
    t.same(run("turtle_fuel"), { fuel = "unlimited", limit = "unlimited" })
end)

t.test("the world's height limits say too_high and too_low", function()
    local run = pack({ max_y = 64, min_y = 64 })
    t.eq(run("turtle_move", { direction = "up" }).reason, "too_high")
    t.eq(run("turtle_move", { direction = "down" }).reason, "too_low")
end)

t.test("dig takes the block into the inventory; nothing there says nothing_to_dig; bedrock stays", function()
    local run, w = pack({ blocks = {
        ["0,64,-1"] = { name = "minecraft:oak_log" },
        ["0,63,0"] = { name = "minecraft:bedrock" },
    } })
    t.same(run("turtle_dig", {}), { dug = true, direction = "forward", block = "minecraft:oak_log" })
    t.eq(w.inv[1].name, "minecraft:oak_log")
    t.same(run("turtle_dig", { direction = "up" }), { dug = false, direction = "up", reason = "nothing_to_dig" })
    local r = run("turtle_dig", { direction = "down" })
    t.eq(r.dug, false)
    t.eq(r.reason, "unbreakable")
    t.truthy(w.blocks["0,63,0"], "bedrock still there")
end)

t.test("turn changes the facing without fuel, and the next move goes the new way", function()
    local run, w = pack({ fuel = 1 })
    t.same(run("turtle_turn", { direction = "right" }), { turned = true, direction = "right" })
    run("turtle_move", { direction = "forward" })
    t.eq(w.x, 1)
    t.eq(w.fuel, 0)
end)

t.test("inspect answers the block's name, state and tags, or false for air", function()
    local run = pack({ blocks = { ["0,64,-1"] = { name = "minecraft:wheat", state = { age = 7 } } } })
    local r = run("turtle_inspect", {})
    t.eq(r.block.name, "minecraft:wheat")
    t.eq(r.block.state.age, 7)
    t.same(run("turtle_inspect", { direction = "up" }), { direction = "up", block = false })
end)

t.test("place puts the selected item; an empty slot says nothing_selected; an occupied spot says blocked", function()
    local run, w = pack({ inventory = { [1] = { name = "minecraft:torch", count = 1 } },
        blocks = { ["0,65,0"] = { name = "minecraft:stone" } } })
    t.same(run("turtle_place", { direction = "down" }), { placed = true, direction = "down",
        item = "minecraft:torch" })
    t.eq(w.blocks["0,63,0"].name, "minecraft:torch")
    t.eq(run("turtle_place", {}).reason, "nothing_selected")
    w.inv[1] = { name = "minecraft:torch", count = 1 }
    local r = run("turtle_place", { direction = "up" })
    t.eq(r.reason, "blocked")
    t.eq(w.inv[1].count, 1, "kept the item")
end)

t.test("suck and drop move counted items between a chest and the selected slot", function()
    local chest = { name = "minecraft:chest", items = { { name = "minecraft:wheat_seeds", count = 10 } } }
    local run, w = pack({ blocks = { ["0,64,-1"] = chest } })
    t.same(run("turtle_suck", { count = 4 }), { sucked = 4, direction = "forward" })
    t.eq(chest.items[1].count, 6)
    t.same(run("turtle_drop", { count = 3 }), { dropped = 3, slot = 1, direction = "forward" })
    t.eq(w.inv[1].count, 1)
    local r = run("turtle_suck", { direction = "up" })
    t.eq(r.reason, "nothing_to_take")
    run("turtle_select", { slot = 5 })
    t.eq(run("turtle_drop", {}).reason, "nothing_selected")
end)

t.test("select and inventory show what is where", function()
    local run = pack({ inventory = { [3] = { name = "minecraft:coal", count = 12 },
        [7] = { name = "minecraft:wheat", count = 5 } } })
    t.same(run("turtle_select", { slot = 3 }), { selected = 3, item = "minecraft:coal", count = 12 })
    local inv = run("turtle_inventory")
    t.eq(inv.selected, 3)
    t.same(inv.items, { { slot = 3, name = "minecraft:coal", count = 12 },
        { slot = 7, name = "minecraft:wheat", count = 5 } })
    t.truthy(json.encode(inv):find('"items":%['), "items encode as a JSON array")
    local one = run("turtle_inventory", { slot = 7 })
    t.eq(one.item.displayName, "wheat")
    t.same(run("turtle_inventory", { slot = 1 }), { slot = 1, item = false })
end)

t.test("bad arguments are invalid_args and nothing happens", function()
    local run, w = pack({ fuel = 5 })
    raises(function() run("turtle_move", { direction = "sideways" }) end, "direction")
    raises(function() run("turtle_move", {}) end, "direction")
    raises(function() run("turtle_dig", { direction = "back" }) end, "direction")
    raises(function() run("turtle_select", { slot = 17 }) end, "slot")
    raises(function() run("turtle_select", { slot = 1.5 }) end, "slot")
    raises(function() run("turtle_suck", { count = -1 }) end, "count")
    raises(function() run("turtle_refuel", { count = "all" }) end, "count")
    t.eq(w.fuel, 5)
    t.eq(#w.calls, 0, "no turtle action was taken")
end)

t.test("register offers the tools in the client's hello with their schemas", function()
    stubs.reset()
    local c = ccagent.connect("ws://127.0.0.1:1/ws", { client_id = "turtle-1" })
    local names = turtle_tools.register(c, double.new())
    t.eq(#names, 11)
    local hello = c:_hello()
    local seen = {}
    for _, cmd in ipairs(hello.commands) do seen[cmd.name] = cmd end
    t.eq(seen.turtle_move.args_schema.properties.direction.enum[2], "back")
    t.eq(seen.turtle_select.args_schema.required[1], "slot")
end)
t.done()
