-- Minimal TAP-style test helper for the Lua unit tier: `ok - name` / `not ok - name: reason` lines,
-- read by test/run-lua-tests.mjs. A test passes only when its function returns without raising.
local M = {}

local failures = 0

local function show(v)
    if type(v) == "string" then return ("%q"):format(v) end
    return tostring(v)
end

--- Run one named test; it fails when fn raises.
function M.test(name, fn)
    local ok, err = xpcall(fn, debug.traceback)
    if ok then
        print("ok - " .. name)
    else
        failures = failures + 1
        print("not ok - " .. name .. ": " .. tostring(err):gsub("\n", " | "))
    end
end

function M.eq(actual, expected, what)
    if actual ~= expected then
        error(("%s: expected %s, got %s"):format(what or "value", show(expected), show(actual)), 2)
    end
end

function M.truthy(v, what)
    if not v then error((what or "value") .. ": expected a true value, got " .. show(v), 2) end
    return v
end

local function deep_eq(a, b, path)
    if type(a) ~= type(b) then return false, path .. ": " .. type(a) .. " vs " .. type(b) end
    if type(a) ~= "table" then
        if a == b then return true end
        return false, path .. ": " .. show(a) .. " vs " .. show(b)
    end
    for k, v in pairs(a) do
        local ok, err = deep_eq(v, b[k], path .. "." .. tostring(k))
        if not ok then return false, err end
    end
    for k in pairs(b) do
        if a[k] == nil then return false, path .. "." .. tostring(k) .. ": missing" end
    end
    return true
end

function M.same(actual, expected, what)
    local ok, err = deep_eq(actual, expected, what or "value")
    if not ok then error(err, 2) end
end

function M.raises(fn, pattern, what)
    local ok, err = pcall(fn)
    if ok then error((what or "call") .. ": expected an error", 2) end
    if pattern and not tostring(err):find(pattern) then
        error((what or "call") .. ": error " .. show(tostring(err)) .. " does not match " .. pattern, 2)
    end
    return err
end

function M.done()
    if failures > 0 then os.exit(1) end
end

return M
