--- Turtle tools: what an agent host on a turtle offers the models besides the core tools.
--
-- Each tool acts once through the `turtle` API and answers with a plain result: what happened, and when the turtle
-- could not act a `reason` a model can branch on (`blocked`, `no_fuel`, `nothing_to_dig`, …) with the game's own
-- `message`. Arguments are checked (a bad direction or slot is an `invalid_args` error, nothing moves).
--
--     require("ccagent.turtle_tools").register(client, turtle)
--
-- Not yet run on a turtle in a Minecraft world: the unit tier drives it against a double of the turtle API that
-- answers as CC:Tweaked 1.116 does (headless CraftOS-PC has no turtles).
--
-- @module ccagent.turtle_tools
local json = require "ccagent.json"

local M = {}

--- The tool names, in registration order.
M.NAMES = {
    "turtle_move", "turtle_turn", "turtle_dig", "turtle_place", "turtle_inspect", "turtle_suck", "turtle_drop",
    "turtle_select", "turtle_inventory", "turtle_refuel", "turtle_fuel",
}

local function fail(message)
    error({ code = "invalid_args", message = message }, 0)
end

-- The game's messages (CC:Tweaked's turtle commands) → a reason a model can branch on.
local REASONS = {
    { "obstructed", "blocked" },
    { "out of fuel", "no_fuel" },
    { "too high", "too_high" },
    { "too low", "too_low" },
    { "leave", "world_edge" },
    { "world border", "world_edge" },
    { "nothing to dig", "nothing_to_dig" },
    { "unbreakable", "unbreakable" },
    { "protected", "protected" },
    { "no tool", "no_tool" },
    { "no items to place", "nothing_selected" },
    { "cannot place", "blocked" },
    { "no items to take", "nothing_to_take" },
    { "no items to drop", "nothing_selected" },
    { "no space", "no_space" },
    { "no items to combust", "nothing_selected" },
    { "not combustible", "not_fuel" },
}

local function reason_of(message)
    local m = tostring(message or ""):lower()
    for _, r in ipairs(REASONS) do
        if m:find(r[1], 1, true) then return r[2] end
    end
    return "failed"
end

local function fuel(t)
    local level = t.getFuelLevel()
    return level
end

local function obj(props, required)
    local r = json.array()
    for i, n in ipairs(required or {}) do r[i] = n end
    return { type = "object", properties = props, required = r }
end

local function enum(values, description)
    return { type = "string", enum = json.array(values), description = description }
end

local DIR3 = { "forward", "up", "down" }

local function direction(args, allowed, default)
    local d = args.direction
    if d == nil then d = default end
    for _, a in ipairs(allowed) do
        if d == a then return d end
    end
    fail(("direction must be one of %s (got %s)"):format(table.concat(allowed, ", "), tostring(d)))
end

-- The API function for `base` in direction `d` (`dig` + `up` → `digUp`).
local function fn_for(t, base, d)
    if d == "forward" then return t[base] end
    return t[base .. d:sub(1, 1):upper() .. d:sub(2)]
end

local function count_arg(args, max)
    local c = args.count
    if c == nil then return nil end
    if type(c) ~= "number" or c < 0 or c > max or c % 1 ~= 0 then
        fail(("count must be a whole number from 0 to %d"):format(max))
    end
    return c
end

local function slot_arg(args, required)
    local s = args.slot
    if s == nil and not required then return nil end
    if type(s) ~= "number" or s < 1 or s > 16 or s % 1 ~= 0 then fail("slot must be a whole number from 1 to 16") end
    return s
end

local function items_in(t)
    local n = 0
    for s = 1, 16 do n = n + t.getItemCount(s) end
    return n
end

--- The tools for turtle API `t`: a list of `{name, description, args_schema, run = function(args)}`.
-- @tparam table t the turtle API (the global `turtle`, or a double of it)
-- @treturn {table...}
function M.tools(t)
    local tools = {}
    local function add(name, description, schema, run)
        tools[#tools + 1] = { name = name, description = description, args_schema = schema, run = run }
    end

    add("turtle_move", "Move the turtle one block (forward, back, up, down). Answers moved, the fuel left, and when "
        .. "it cannot move a reason: blocked, no_fuel, too_high, too_low, world_edge.",
        obj({ direction = enum({ "forward", "back", "up", "down" }) }, { "direction" }),
        function(args)
            local d = direction(args, { "forward", "back", "up", "down" })
            local ok, msg = t[d]()
            if ok then return { moved = true, direction = d, fuel = fuel(t) } end
            return { moved = false, direction = d, reason = reason_of(msg), message = msg, fuel = fuel(t) }
        end)

    add("turtle_turn", "Turn the turtle left or right on the spot (costs no fuel).",
        obj({ direction = enum({ "left", "right" }) }, { "direction" }),
        function(args)
            local d = direction(args, { "left", "right" })
            local ok, msg = (d == "left" and t.turnLeft or t.turnRight)()
            if ok then return { turned = true, direction = d } end
            return { turned = false, direction = d, reason = reason_of(msg), message = msg }
        end)

    add("turtle_dig", "Dig the block in front, above or below (direction, default forward). Answers dug and the "
        .. "block's name, or a reason: nothing_to_dig, unbreakable, protected, no_tool.",
        obj({ direction = enum(DIR3) }),
        function(args)
            local d = direction(args, DIR3, "forward")
            local has, block = fn_for(t, "inspect", d)()
            if not has then return { dug = false, direction = d, reason = "nothing_to_dig" } end
            local ok, msg = fn_for(t, "dig", d)()
            if ok then return { dug = true, direction = d, block = block.name } end
            return { dug = false, direction = d, block = block.name, reason = reason_of(msg), message = msg }
        end)

    add("turtle_place", "Place the selected item in front, above or below (direction, default forward). Answers "
        .. "placed, or a reason: blocked, nothing_selected, protected.",
        obj({ direction = enum(DIR3), text = { type = "string", description = "sign text, when placing a sign" } }),
        function(args)
            local d = direction(args, DIR3, "forward")
            if args.text ~= nil and type(args.text) ~= "string" then fail("text must be a string") end
            local detail = t.getItemDetail(t.getSelectedSlot())
            if not detail then
                return { placed = false, direction = d, reason = "nothing_selected", slot = t.getSelectedSlot() }
            end
            local ok, msg = fn_for(t, "place", d)(args.text)
            if ok then return { placed = true, direction = d, item = detail.name } end
            return { placed = false, direction = d, item = detail.name, reason = reason_of(msg), message = msg }
        end)

    add("turtle_inspect", "Look at the block in front, above or below (direction, default forward): its name, "
        .. "state and tags, or block = false for air.",
        obj({ direction = enum(DIR3) }),
        function(args)
            local d = direction(args, DIR3, "forward")
            local has, block = fn_for(t, "inspect", d)()
            if not has then return { direction = d, block = false } end
            return { direction = d, block = { name = block.name, state = block.state, tags = block.tags } }
        end)

    add("turtle_suck", "Pick up items from the block or the ground in front, above or below into the inventory "
        .. "(count: at most this many, default a stack). Answers how many items came in, or reason nothing_to_take "
        .. "or no_space.",
        obj({ direction = enum(DIR3), count = { type = "integer", minimum = 0, maximum = 64 } }),
        function(args)
            local d = direction(args, DIR3, "forward")
            local count = count_arg(args, 64)
            local before = items_in(t)
            local ok, msg = fn_for(t, "suck", d)(count)
            if ok then return { sucked = items_in(t) - before, direction = d } end
            return { sucked = 0, direction = d, reason = reason_of(msg), message = msg }
        end)

    add("turtle_drop", "Drop (or put into a chest) items of the selected slot in front, above or below "
        .. "(count: default the whole slot). Answers how many left, or reason nothing_selected or no_space.",
        obj({ direction = enum(DIR3), count = { type = "integer", minimum = 0, maximum = 64 } }),
        function(args)
            local d = direction(args, DIR3, "forward")
            local count = count_arg(args, 64)
            local slot = t.getSelectedSlot()
            local before = t.getItemCount(slot)
            local ok, msg = fn_for(t, "drop", d)(count)
            if ok then return { dropped = before - t.getItemCount(slot), slot = slot, direction = d } end
            return { dropped = 0, slot = slot, direction = d, reason = reason_of(msg), message = msg }
        end)

    add("turtle_select", "Select an inventory slot (1-16) for place, drop and refuel. Answers the item in it.",
        obj({ slot = { type = "integer", minimum = 1, maximum = 16 } }, { "slot" }),
        function(args)
            local slot = slot_arg(args, true)
            t.select(slot)
            local detail = t.getItemDetail(slot)
            return { selected = slot, item = detail and detail.name or false, count = t.getItemCount(slot) }
        end)

    add("turtle_inventory", "The inventory: every slot that holds items (slot, name, count) and the selected slot; "
        .. "with slot, that slot in detail (display name, damage, tags).",
        obj({ slot = { type = "integer", minimum = 1, maximum = 16 } }),
        function(args)
            local slot = slot_arg(args, false)
            if slot then
                local detail = t.getItemDetail(slot, true)
                return { slot = slot, item = detail or false }
            end
            local items = json.array()
            for s = 1, 16 do
                local detail = t.getItemDetail(s)
                if detail then items[#items + 1] = { slot = s, name = detail.name, count = detail.count } end
            end
            return { selected = t.getSelectedSlot(), items = items }
        end)

    add("turtle_refuel", "Burn fuel items of the selected slot (count: at most this many, default all of them). "
        .. "Answers the fuel before and after, or reason nothing_selected or not_fuel.",
        obj({ count = { type = "integer", minimum = 0, maximum = 64 } }),
        function(args)
            local count = count_arg(args, 64)
            local before = fuel(t)
            local ok, msg = t.refuel(count)
            if ok then return { refueled = true, fuel_before = before, fuel = fuel(t), limit = t.getFuelLimit() } end
            return { refueled = false, fuel = before, reason = reason_of(msg), message = msg }
        end)

    add("turtle_fuel", "The fuel level and the most the turtle can hold (\"unlimited\" when the server turned fuel "
        .. "off). One move costs one fuel.", obj({}),
        function()
            return { fuel = fuel(t), limit = t.getFuelLimit() }
        end)

    return tools
end

--- Register the turtle tools on `client`.
-- @tparam table client a @{ccagent.Client}
-- @tparam table t the turtle API
-- @treturn {string...} the names registered
function M.register(client, t)
    local names = {}
    for _, tool in ipairs(M.tools(t)) do
        client:register(tool.name, function(args) return tool.run(args or {}) end,
            { description = tool.description, args_schema = tool.args_schema })
        names[#names + 1] = tool.name
    end
    return names
end

return M
