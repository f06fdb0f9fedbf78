-- Stand-in for CraftOS's cc.expect (rom/modules/main/cc/expect.lua) so the library loads under plain Lua 5.2.
-- Same contract: raise "bad argument #n (expected T, got U)" / "bad field 'k' (expected T, got U)" at the caller.
local M = {}

local function check(value, ...)
    local t = type(value)
    for i = 1, select("#", ...) do
        if t == select(i, ...) then return true end
    end
    return false, t
end

function M.expect(index, value, ...)
    local ok, t = check(value, ...)
    if ok then return value end
    error(("bad argument #%d (expected %s, got %s)"):format(index, table.concat({ ... }, " or "), t), 3)
end

function M.field(tbl, index, ...)
    local ok, t = check(tbl[index], ...)
    if ok then return tbl[index] end
    error(("bad field '%s' (expected %s, got %s)"):format(index, table.concat({ ... }, " or "), t), 3)
end

return M
