--- Stack tracebacks as the model should read them.
--
-- A Lua error inside a program or tool that the client runs carries a traceback whose lower frames are the client's
-- own (`/ccagent/ccagent/host.lua:210: in function <...>`, the `xpcall` that called the program). A small model
-- mistakes them for the bug. @{trim} removes them; the caller keeps the untrimmed text for the step log.
--
-- @module ccagent.trace

local expect = require("cc.expect").expect

local M = {}

-- The folder the client library is installed in (`/ccagent` for `/ccagent/ccagent/trace.lua`), found from this
-- file's own chunk name so that a mounted or relocated install is recognised too.
local function library_root()
    local info = debug and debug.getinfo and debug.getinfo(1, "S")
    local src = info and info.source or ""
    local file = src:match("^@(.+)$")
    if not file then return nil end
    if file:sub(1, 1) ~= "/" then file = "/" .. file end
    return file:match("^(.*)/[^/]+/[^/]+$")
end

local ROOT = library_root()

--- Whether a traceback line is a frame of the client library.
-- @tparam string line One line of `debug.traceback` output.
-- @tparam[opt] string root The library folder (default: where this module was loaded from).
-- @treturn boolean
function M.is_library_frame(line, root)
    expect(1, line, "string")
    root = root or ROOT
    if not root or root == "" then return false end
    local loc = line:match("^%s*(.-):") or ""
    if loc:sub(1, 1) ~= "/" then loc = "/" .. loc end
    return loc:sub(1, #root + 1) == root .. "/"
end

--- Remove the client library's frames from a traceback.
-- The `[C]: in function 'xpcall'` (or `pcall`) frame directly before a library frame goes too: it is the call the
-- client made, not the program's.
-- @tparam string text A message followed by `stack traceback:` and its frames (as `debug.traceback` returns it).
-- @tparam[opt] string root The library folder (default: where this module was loaded from).
-- @treturn string The trimmed text.
-- @treturn boolean Whether anything was removed.
function M.trim(text, root)
    expect(1, text, "string")
    local at = text:find("\nstack traceback:", 1, true)
    if not at then return text, false end
    local head, frames = text:sub(1, at - 1), {}
    for line in text:sub(at + 1):gmatch("[^\n]+") do frames[#frames + 1] = line end
    local kept, removed = { head, frames[1] }, false
    for i = 2, #frames do
        local line, nxt = frames[i], frames[i + 1]
        local is_call = line:match("^%s*%[C%]: in function '?x?pcall'?") ~= nil
        if M.is_library_frame(line, root) or (is_call and nxt ~= nil and M.is_library_frame(nxt, root)) then
            removed = true
        else
            kept[#kept + 1] = line
        end
    end
    -- Nothing but the header left: the whole trace was the client's (an error raised by the client itself).
    if #kept == 2 then kept[2] = nil end
    return table.concat(kept, "\n"), removed
end

return M
