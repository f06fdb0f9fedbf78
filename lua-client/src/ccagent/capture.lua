--- Run a function with its terminal output captured.
--
-- The function runs in its own coroutine with `term` redirected to a hidden
-- window only while it runs, so other coroutines (the UI, the connection)
-- keep drawing on the real screen. Lines that scroll off the top are kept, so
-- long outputs are not lost (up to `max_lines`). While it runs, the screen mirror (when on) shows the hidden
-- window instead of the screen, so the dashboard sees what the program prints (see @{ccagent.screen}).
--
-- @module ccagent.capture
local screen = require "ccagent.screen"

local M = {}

--- Most lines kept; older ones are dropped and counted.
M.MAX_LINES = 4000

local function rtrim(s) return (s:gsub("%s+$", "")) end

--- A hidden terminal that remembers everything written to it.
-- @tparam[opt] number width (default 51)
-- @tparam[opt] number height (default 19)
-- @treturn table a term-compatible object with an extra `output()` method
function M.terminal(width, height)
    width, height = width or 51, height or 19
    local win = window.create(term.native(), 1, 1, width, height, false)
    local history, dropped = {}, 0
    local t = {}
    for k, v in pairs(win) do t[k] = v end
    t.scroll = function(n)
        if type(n) == "number" and n > 0 then
            for y = 1, math.min(n, height) do
                history[#history + 1] = rtrim((win.getLine(y)))
                if #history > M.MAX_LINES then
                    table.remove(history, 1)
                    dropped = dropped + 1
                end
            end
        end
        return win.scroll(n)
    end
    --- Everything printed so far, trailing blank lines removed.
    t.output = function()
        local lines = {}
        if dropped > 0 then lines[1] = ("[%d earlier lines dropped]"):format(dropped) end
        for i = 1, #history do lines[#lines + 1] = history[i] end
        local _, cy = win.getCursorPos()
        local last = 0
        for y = 1, height do
            if rtrim((win.getLine(y))) ~= "" or y <= cy - 1 then last = y end
        end
        for y = 1, last do lines[#lines + 1] = rtrim((win.getLine(y))) end
        while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
        return table.concat(lines, "\n")
    end
    return t
end

--- Run `fn(...)` with output captured, cooperating with the caller's event loop.
-- @tparam function fn
-- @param ... arguments for fn
-- @treturn boolean whether fn returned without error
-- @treturn string the captured output
-- @return everything fn returned, or the error
function M.run(fn, ...)
    local target = M.terminal()
    local inner = target -- the program may redirect further; keep its choice between resumes
    local co = coroutine.create(fn)
    local args = table.pack(...)
    local mirror = screen.current()
    if mirror then mirror:show(target) end
    local function done(...)
        if mirror then mirror:unshow(target) end
        return ...
    end
    while true do
        local prev = term.redirect(inner)
        local res = table.pack(coroutine.resume(co, table.unpack(args, 1, args.n)))
        inner = term.current()
        term.redirect(prev)
        if not res[1] then return done(false, target.output(), res[2]) end
        if coroutine.status(co) == "dead" then return done(true, target.output(), table.unpack(res, 2, res.n)) end
        local filter = res[2]
        repeat
            args = table.pack(coroutine.yield(filter))
        until filter == nil or args[1] == filter or args[1] == "terminate"
    end
end

return M
