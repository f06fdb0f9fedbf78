-- An in-memory stand-in for CC's `fs` API (the subset ccagent.tools uses), for the plain-Lua unit tier.
-- Paths are normalised like fs.combine. Directories are implicit parents plus explicit makeDir calls.
local M = {}

local function norm(p)
    local parts = {}
    for seg in p:gmatch("[^/]+") do
        if seg == ".." then parts[#parts] = nil elseif seg ~= "." then parts[#parts + 1] = seg end
    end
    return table.concat(parts, "/")
end

function M.new()
    local files, dirs = {}, { [""] = true }
    local fs = { files = files }
    function fs.combine(a, b) return norm(a .. "/" .. (b or "")) end
    function fs.getDir(p)
        p = norm(p)
        return p:match("^(.*)/[^/]*$") or ""
    end
    function fs.makeDir(p)
        p = norm(p)
        while p ~= "" do dirs[p] = true p = fs.getDir(p) end
    end
    function fs.isDir(p) return dirs[norm(p)] == true end
    function fs.exists(p) p = norm(p) return files[p] ~= nil or dirs[p] == true end
    function fs.open(p, mode)
        p = norm(p)
        if mode:sub(1, 1) == "r" then
            if files[p] == nil then return nil, p .. ": No such file" end
            local data = files[p]
            return { readAll = function() return data end, close = function() end }
        end
        fs.makeDir(fs.getDir(p))
        local buf = { mode:sub(1, 1) == "a" and files[p] or "" }
        return {
            write = function(s) buf[#buf + 1] = s end,
            close = function() files[p] = table.concat(buf) end,
        }
    end
    function fs.delete(p) p = norm(p) files[p] = nil dirs[p] = nil end
    function fs.copy(a, b)
        a, b = norm(a), norm(b)
        if files[b] ~= nil then error("File exists", 0) end
        fs.makeDir(fs.getDir(b))
        files[b] = files[a]
    end
    function fs.move(a, b)
        fs.copy(a, b)
        files[norm(a)] = nil
    end
    function fs.list(p)
        p = norm(p)
        local out, seen = {}, {}
        for k in pairs(files) do
            if fs.getDir(k) == p and not seen[k] then seen[k] = true out[#out + 1] = k:match("[^/]+$") end
        end
        table.sort(out)
        return out
    end
    return fs
end

return M
