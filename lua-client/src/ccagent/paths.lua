--- Path resolution for the file tools, with an optional sandbox root.
--
-- Paths are normalised the way CC's `fs.combine` does (`/` separated, `.` and
-- `..` resolved, no leading slash), except that a `..` which would climb above
-- the root is an error instead of being clamped, so a sandboxed tool can never
-- name a file outside its root.
--
-- @module ccagent.paths
local M = {}

--- Normalise a path.
-- @tparam string path
-- @treturn[1] string the normalised path ("" is the root)
-- @treturn[2] nil
-- @treturn[2] string why (it climbs above the root, or has invalid characters)
function M.normalize(path)
    if type(path) ~= "string" then return nil, "path must be a string" end
    if path:find('[%c"*:<>?|]') then return nil, "path has characters CC does not allow: " .. path end
    local parts = {}
    for seg in path:gsub("\\", "/"):gmatch("[^/]+") do
        if seg == ".." then
            if #parts == 0 then return nil, "path escapes the root: " .. path end
            parts[#parts] = nil
        elseif seg ~= "." then
            parts[#parts + 1] = seg
        end
    end
    return table.concat(parts, "/")
end

--- Resolve `path` inside `root` (both normalised). `root` "" means the whole computer.
-- @tparam string root the sandbox root ("" for full access)
-- @tparam string path the path the model gave (absolute or relative, always taken from `root`)
-- @treturn[1] string the path to use with `fs`
-- @treturn[2] nil
-- @treturn[2] table `{code="forbidden", message=...}`
function M.resolve(root, path)
    local r = M.normalize(root or "")
    local p, err = M.normalize(path)
    if not p then return nil, { code = "forbidden", message = err } end
    if r == nil or r == "" then return p end
    if p == "" then return r end
    return r .. "/" .. p
end

--- The inverse of @{resolve}: how a real path looks from inside the sandbox ("/x/y").
-- @tparam string root
-- @tparam string real
-- @treturn string
function M.display(root, real)
    local r = M.normalize(root or "") or ""
    if r ~= "" and real:sub(1, #r) == r then real = real:sub(#r + 2) end
    return "/" .. real
end

return M
