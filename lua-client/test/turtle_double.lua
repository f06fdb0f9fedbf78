-- A double of CC:Tweaked's `turtle` API over a small world of blocks, for the unit tier (headless CraftOS-PC has no
-- turtles). It keeps the real API's contract: every action returns `true` or `false, message` with the messages
-- CC:Tweaked 1.116 uses (TurtleMoveCommand, TurtleDigCommand, TurtlePlaceCommand, TurtleSuckCommand,
-- TurtleDropCommand, TurtleRefuelCommand, TurtleInspectCommand), a move costs one fuel, turning costs none,
-- `select` raises on a slot outside 1-16, and `getFuelLevel` is "unlimited" when fuel is off.
local M = {}

local FUEL = { ["minecraft:coal"] = 80, ["minecraft:charcoal"] = 80, ["minecraft:lava_bucket"] = 1000 }
local UNBREAKABLE = { ["minecraft:bedrock"] = true }
-- facing: 0 north (-z), 1 east (+x), 2 south (+z), 3 west (-x)
local DX = { [0] = 0, 1, 0, -1 }
local DZ = { [0] = -1, 0, 1, 0 }

--- A turtle at (0, 64, 0) facing north. opts: `fuel` (default 10), `limit` (20000, or "unlimited"),
-- `blocks` ({["x,y,z"] = {name=…, items={{name,count}…}?}}), `inventory` ({[slot] = {name, count}}),
-- `min_y`/`max_y` (world height, -64/320).
function M.new(opts)
    opts = opts or {}
    local w = {
        x = 0, y = 64, z = 0, facing = 0,
        fuel = opts.fuel or 10, limit = opts.limit or 20000,
        blocks = opts.blocks or {}, inv = {}, selected = 1, dropped = {},
        min_y = opts.min_y or -64, max_y = opts.max_y or 320, calls = {},
    }
    for s, it in pairs(opts.inventory or {}) do w.inv[s] = { name = it.name, count = it.count } end
    local t = { world = w }

    local function key(x, y, z) return x .. "," .. y .. "," .. z end
    local function at(d)
        if d == "up" then return w.x, w.y + 1, w.z end
        if d == "down" then return w.x, w.y - 1, w.z end
        local sign = d == "back" and -1 or 1
        return w.x + sign * DX[w.facing], w.y, w.z + sign * DZ[w.facing]
    end
    local function block(d) return w.blocks[key(at(d))] end
    local function log(name) w.calls[#w.calls + 1] = name end
    local function unlimited() return w.limit == "unlimited" end

    local function add_item(name, count)
        for pass = 1, 2 do
            for s = 1, 16 do
                local it = w.inv[s]
                if pass == 1 and it and it.name == name and it.count < 64 then
                    local n = math.min(64 - it.count, count)
                    it.count, count = it.count + n, count - n
                elseif pass == 2 and not it and count > 0 then
                    local n = math.min(64, count)
                    w.inv[s] = { name = name, count = n }
                    count = count - n
                end
                if count == 0 then return 0 end
            end
        end
        return count
    end

    local function move(d)
        log(d)
        if not unlimited() and w.fuel <= 0 then return false, "Out of fuel" end
        local x, y, z = at(d)
        if y > w.max_y then return false, "Too high to move" end
        if y < w.min_y then return false, "Too low to move" end
        if w.blocks[key(x, y, z)] then return false, "Movement obstructed" end
        w.x, w.y, w.z = x, y, z
        if not unlimited() then w.fuel = w.fuel - 1 end
        return true
    end
    t.forward = function() return move("forward") end
    t.back = function() return move("back") end
    t.up = function() return move("up") end
    t.down = function() return move("down") end
    t.turnLeft = function()
        log("turnLeft")
        w.facing = (w.facing + 3) % 4
        return true
    end
    t.turnRight = function()
        log("turnRight")
        w.facing = (w.facing + 1) % 4
        return true
    end

    local function dig(d)
        log("dig" .. d)
        local b = block(d)
        if not b then return false, "Nothing to dig here" end
        if UNBREAKABLE[b.name] then return false, "Cannot break unbreakable block" end
        w.blocks[key(at(d))] = nil
        add_item(b.drop or b.name, 1)
        return true
    end
    local function inspect(d)
        local b = block(d)
        if not b then return false, "No block to inspect" end
        return true, { name = b.name, state = b.state or {}, tags = b.tags or {} }
    end
    local function place(d, text)
        log("place" .. d)
        local it = w.inv[w.selected]
        if not it then return false, "No items to place" end
        if block(d) then return false, "Cannot place block here" end
        w.blocks[key(at(d))] = { name = it.name, text = text }
        it.count = it.count - 1
        if it.count == 0 then w.inv[w.selected] = nil end
        return true
    end
    local function suck(d, count)
        log("suck" .. d)
        count = count or 64
        local b = block(d)
        local source = b and b.items or w.dropped[key(at(d))]
        local first = source and source[1]
        if not first then return false, "No items to take" end
        local n = math.min(count, first.count)
        local left = add_item(first.name, n)
        if left == n then return false, "No space for items" end
        first.count = first.count - (n - left)
        if first.count == 0 then table.remove(source, 1) end
        return true
    end
    local function drop(d, count)
        log("drop" .. d)
        local it = w.inv[w.selected]
        if not it then return false, "No items to drop" end
        local n = math.min(count or it.count, it.count)
        local b = block(d)
        local into
        if b then
            if not b.items then return false, "No space for items" end
            into = b.items
        else
            local k = key(at(d))
            w.dropped[k] = w.dropped[k] or {}
            into = w.dropped[k]
        end
        into[#into + 1] = { name = it.name, count = n }
        it.count = it.count - n
        if it.count == 0 then w.inv[w.selected] = nil end
        return true
    end
    for _, d in ipairs({ "forward", "up", "down" }) do
        local suffix = d == "forward" and "" or (d:sub(1, 1):upper() .. d:sub(2))
        t["dig" .. suffix] = function() return dig(d) end
        t["inspect" .. suffix] = function() return inspect(d) end
        t["place" .. suffix] = function(text) return place(d, text) end
        t["suck" .. suffix] = function(count) return suck(d, count) end
        t["drop" .. suffix] = function(count) return drop(d, count) end
    end

    local function check_slot(s)
        if type(s) ~= "number" or s < 1 or s > 16 then error("Slot out of range", 3) end
    end
    t.select = function(s)
        check_slot(s)
        w.selected = s
        return true
    end
    t.getSelectedSlot = function() return w.selected end
    t.getItemCount = function(s)
        s = s or w.selected
        check_slot(s)
        return w.inv[s] and w.inv[s].count or 0
    end
    t.getItemDetail = function(s, detailed)
        s = s or w.selected
        check_slot(s)
        local it = w.inv[s]
        if not it then return nil end
        local d = { name = it.name, count = it.count }
        if detailed then
            d.displayName = it.name:gsub("^.-:", ""):gsub("_", " ")
            d.maxCount = 64
            d.tags = {}
        end
        return d
    end
    t.getFuelLevel = function()
        if unlimited() then return "unlimited" end
        return w.fuel
    end
    t.getFuelLimit = function()
        if unlimited() then return "unlimited" end
        return w.limit
    end
    t.refuel = function(count)
        log("refuel")
        if unlimited() then return true end
        local it = w.inv[w.selected]
        if not it then return false, "No items to combust" end
        local value = FUEL[it.name]
        if not value then return false, "Items not combustible" end
        local n = math.min(count or it.count, it.count)
        w.fuel = math.min(w.limit, w.fuel + n * value)
        it.count = it.count - n
        if it.count == 0 then w.inv[w.selected] = nil end
        return true
    end
    return t
end

return M
