-- The screen mirror keeps a copy of the terminal it wraps and sends full frames, then only the changed rows.
local t = require "helper"
local json = require "ccagent.json"
local screen = require "ccagent.screen"

-- A terminal that records the calls it gets (the mirror must still pass every call on).
local function fake_term(w, h)
    local calls = {}
    local term = { calls = calls, w = w, h = h, cx = 1, cy = 1 }
    for _, name in ipairs({ "write", "blit", "clear", "clearLine", "scroll", "setCursorPos", "setCursorBlink",
        "setTextColour", "setTextColor", "setBackgroundColour", "setBackgroundColor", "setPaletteColour" }) do
        term[name] = function(...) calls[#calls + 1] = { name, ... } end
    end
    term.getSize = function() return term.w, term.h end
    term.getCursorPos = function() return 1, 1 end
    term.getTextColour = function() return 1 end
    term.getBackgroundColour = function() return 32768 end
    return term
end

local function new(w, h)
    local tm = fake_term(w, h)
    local notified = 0
    local m = screen.new(tm, { notify = function() notified = notified + 1 end })
    return tm, m, function() return notified end
end

local function row(frame, y)
    for _, l in ipairs(frame.lines) do if l.y == y then return l end end
    return nil
end

t.test("the first frame is full: every row, blank, white on black, with the default palette", function()
    local _, m = new(5, 3)
    local f = m:frame()
    t.eq(f.type, "screen_frame")
    t.eq(f.full, true)
    t.eq(f.width, 5)
    t.eq(f.height, 3)
    t.eq(#f.lines, 3)
    t.eq(row(f, 2).text, "     ")
    t.eq(row(f, 2).fg, "00000")
    t.eq(row(f, 2).bg, "fffff")
    t.eq(#f.palette, 16)
    t.eq(f.palette[15], 0xcc4c4c)
end)

t.test("calls reach the wrapped terminal unchanged", function()
    local tm = new(5, 3)
    tm.setCursorPos(2, 1)
    tm.write("hi")
    t.eq(tm.calls[1][1], "setCursorPos")
    t.eq(tm.calls[2][1], "write")
    t.eq(tm.calls[2][2], "hi")
end)

t.test("writes and colours land in the copy; the next frame carries only the changed rows", function()
    local tm, m = new(6, 3)
    m:frame()
    tm.setCursorPos(2, 2)
    tm.setTextColour(16384) -- red: e
    tm.setBackgroundColour(2048) -- blue: b
    tm.write("Hey")
    local f = m:frame()
    t.eq(f.full, false)
    t.eq(#f.lines, 1)
    t.eq(row(f, 2).text, " Hey  ")
    t.eq(row(f, 2).fg, "0eee00")
    t.eq(row(f, 2).bg, "fbbbff")
    t.eq(f.cursor.x, 5)
    t.eq(f.cursor.y, 2)
    t.eq(f.cursor.fg, "e")
    t.eq(f.palette, nil)
    t.eq(#m:frame().lines, 0)
end)

t.test("blit sets text and both colours per cell; writes are clipped at the edges", function()
    local tm, m = new(4, 2)
    m:frame()
    tm.setCursorPos(-1, 1)
    tm.blit("abcdef", "012345", "fedcba")
    tm.setCursorPos(3, 2)
    tm.write("xyz")
    local f = m:frame()
    t.eq(row(f, 1).text, "cdef")
    t.eq(row(f, 1).fg, "2345")
    t.eq(row(f, 1).bg, "dcba")
    t.eq(row(f, 2).text, "  xy")
end)

t.test("scroll moves rows up and blanks the bottom in the background colour; clearLine blanks one row", function()
    local tm, m = new(3, 3)
    for y = 1, 3 do
        tm.setCursorPos(1, y)
        tm.write("r" .. y)
    end
    m:frame()
    tm.setBackgroundColour(2)
    tm.scroll(1)
    local f = m:frame()
    t.eq(#f.lines, 3)
    t.eq(row(f, 1).text, "r2 ")
    t.eq(row(f, 2).text, "r3 ")
    t.eq(row(f, 3).text, "   ")
    t.eq(row(f, 3).bg, "111")
    tm.setCursorPos(1, 1)
    tm.clearLine()
    f = m:frame()
    t.eq(#f.lines, 1)
    t.eq(row(f, 1).text, "   ")
end)

t.test("clear makes the next frame full", function()
    local tm, m = new(3, 2)
    m:frame()
    tm.clear()
    local f = m:frame()
    t.eq(f.full, true)
    t.eq(#f.lines, 2)
end)

t.test("a resize crops or pads the copy and makes the next frame full at the new size", function()
    local tm, m = new(4, 2)
    tm.write("abcd")
    m:frame()
    tm.w, tm.h = 2, 3
    t.eq(m:check_size(), true)
    local f = m:frame()
    t.eq(f.full, true)
    t.eq(f.width, 2)
    t.eq(f.height, 3)
    t.eq(row(f, 1).text, "ab")
    t.eq(row(f, 3).text, "  ")
end)

t.test("bytes 128-255 go out as one character each (Latin-1 code points), keeping the row's width", function()
    local tm, m = new(3, 1)
    tm.write("\143a\255")
    local f = m:frame()
    local text = json.encode(f)
    t.truthy(text:find('"text":"\\u008fa\\u00ff"', 1, true), "encoded row in " .. text)
end)

t.test("palette changes are sent; a change is announced once until the next frame", function()
    local tm, m, notified = new(2, 1)
    m:frame()
    local before = notified()
    tm.setPaletteColour(16384, 0x123456)
    tm.write("a")
    tm.write("b")
    t.eq(notified(), before + 1)
    local f = m:frame()
    t.eq(f.palette[15], 0x123456)
    tm.setPaletteColour(1, 1, 0, 0)
    t.eq(m:frame().palette[1], 0xff0000)
end)

t.test("uninstall puts the terminal's own functions back", function()
    local tm = fake_term(2, 1)
    local own = tm.write
    local m = screen.new(tm, { notify = function() end })
    t.truthy(tm.write ~= own, "wrapped")
    m:uninstall()
    t.eq(tm.write, own)
end)

t.test("off by default; on with cfg.screen or the ccagent.screen setting", function()
    t.eq(screen.enabled({}), false)
    t.eq(screen.enabled({ screen = true }), true)
    t.eq(screen.enabled({ screen = false }), false)
    _G.settings = { get = function(k) return k == "ccagent.screen" end }
    t.eq(screen.enabled({}), true)
    _G.settings = nil
end)

t.test("the server's word: on turns it on, off wins on either side", function()
    t.eq(screen.enabled({}, true), true, "server on, computer silent")
    t.eq(screen.enabled({}, false), false)
    t.eq(screen.enabled({}, nil), false)
    t.eq(screen.enabled({ screen = true }, nil), true, "computer on, server silent")
    t.eq(screen.enabled({ screen = true }, false), false, "the server's off wins")
    t.eq(screen.enabled({ screen = false }, true), false, "the player's local off wins")
    _G.settings = { get = function(k) if k == "ccagent.screen" then return false end end }
    t.eq(screen.enabled({}, true), false, "the setting's off wins")
    _G.settings = { get = function() return nil end }
    t.eq(screen.enabled({}, true), true, "an unset setting is no word")
    _G.settings = nil
end)

-- A hidden window as CC's window API has it: rows in blit form, readable with getLine.
local function fake_window(w, h)
    local win = { cx = 1, cy = 1, fg = "0", bg = "f", text = {}, fgs = {}, bgs = {} }
    for y = 1, h do win.text[y], win.fgs[y], win.bgs[y] = (" "):rep(w), ("0"):rep(w), ("f"):rep(w) end
    function win.getSize() return w, h end
    function win.getCursorPos() return win.cx, win.cy end
    function win.setCursorPos(x, y) win.cx, win.cy = x, y end
    function win.getCursorBlink() return false end
    function win.getLine(y) return win.text[y], win.fgs[y], win.bgs[y] end
    function win.setTextColour(c) win.fg = screen.digit(c) end
    function win.write(s)
        local y, x = win.cy, win.cx
        win.text[y] = win.text[y]:sub(1, x - 1) .. s .. win.text[y]:sub(x + #s)
        win.fgs[y] = win.fgs[y]:sub(1, x - 1) .. win.fg:rep(#s) .. win.fgs[y]:sub(x + #s)
        win.cx = x + #s
    end
    return win
end

t.test("a shown window (a running program's capture) is mirrored instead of the screen, then the screen", function()
    local tm, m = new(6, 2)
    tm.write("shell")
    m:frame()
    local win = fake_window(4, 2)
    local own_write = win.write
    m:show(win)
    t.truthy(m:has_changes(), "showing asks for a frame")
    local f = m:frame()
    t.eq(f.full, true)
    t.eq(f.width, 4)
    t.eq(#f.lines, 2)
    t.eq(m:has_changes(), false)
    win.setCursorPos(1, 2)
    win.setTextColour(16384)
    win.write("OK")
    tm.write("!") -- the screen's own changes meanwhile are not sent
    t.truthy(m:has_changes())
    f = m:frame()
    t.eq(f.full, false)
    t.eq(#f.lines, 1)
    t.eq(f.lines[1].y, 2)
    t.eq(f.lines[1].text, "OK  ")
    t.eq(f.lines[1].fg, "ee00")
    t.eq(f.cursor.x, 3)
    m:unshow(win)
    t.eq(win.write, own_write, "the window's functions are put back")
    f = m:frame()
    t.eq(f.full, true)
    t.eq(f.width, 6)
    t.eq(row(f, 1).text, "shell!")
end)

t.test("the running mirror is found by programs; uninstall forgets it and its shown windows", function()
    local _, m = new(2, 1)
    t.eq(screen.current(), m)
    local win = fake_window(2, 1)
    local own_write = win.write
    m:show(win)
    m:uninstall()
    t.eq(screen.current(), nil)
    t.eq(win.write, own_write)
end)

t.test("the frame rate is capped at MAX_FPS whatever is asked", function()
    local _, m = new(2, 1)
    t.eq(m.interval, 1 / screen.MAX_FPS)
    local m2 = screen.new(fake_term(2, 1), { fps = 50, notify = function() end })
    t.eq(m2.interval, 1 / screen.MAX_FPS)
    local m3 = screen.new(fake_term(2, 1), { fps = 2, notify = function() end })
    t.eq(m3.interval, 0.5)
end)

t.done()
