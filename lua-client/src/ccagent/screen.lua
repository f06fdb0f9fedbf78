--- The screen mirror: this computer's terminal, sent to the orchestrator for the dashboard (off by default).
--
-- @{new} wraps a terminal in place (by default `term.native()`, the real screen: every program, multishell tab
-- and window draws through it) so that each drawing call also updates a copy of the screen and marks the rows it
-- changed. @{Mirror:run} sends `screen_frame` messages: every row when connected and after a resize, then only the
-- changed rows, at most `fps` frames a second (default @{MAX_FPS}). Turn it on with `set ccagent.screen true`
-- (or `"screen": true` in `/.ccagent/config.json`, or `ccagent-host --screen`), or from the orchestrator (an
-- operator's switch, or its config file's `server.screen`): see @{enabled} for how the two sides combine.
--
-- A program the agent runs (`run_program`, `shell_exec`) prints into a hidden capture window (see
-- @{ccagent.capture}); while it runs, the mirror shows that window instead (@{Mirror:show}), then the screen again.
--
--     local mirror = require("ccagent.screen").new(term.native())
--     parallel.waitForAny(function() client:run() end, function() mirror:run(client) end)
--
-- What was on the screen before the mirror was installed is not known: it shows once redrawn (the same for
-- palette changes made before).
--
-- @module ccagent.screen
local json = require "ccagent.json"

local M = {}

--- Most frames a second (the orchestrator refuses more).
M.MAX_FPS = 10

--- The CC setting that turns the mirror on.
M.SETTING = "ccagent.screen"

local HEX = "0123456789abcdef"
local floor, s_rep, s_sub, s_char, s_byte = math.floor, string.rep, string.sub, string.char, string.byte

-- The blit digit of a colour (2^n -> the n-th hex digit); anything else is white.
local function digit(colour)
    if type(colour) ~= "number" or colour < 1 then return "0" end
    local n = 0
    while colour > 1 and n < 15 do
        colour = floor(colour / 2)
        n = n + 1
    end
    return s_sub(HEX, n + 1, n + 1)
end
M.digit = digit

-- Put `s` into `row` from column `x` (1-based), clipped to the row's width.
local function splice(row, x, s)
    local w = #row
    if x > w or x + #s - 1 < 1 then return row end
    if x < 1 then
        s = s_sub(s, 2 - x)
        x = 1
    end
    if x + #s - 1 > w then s = s_sub(s, 1, w - x + 1) end
    return s_sub(row, 1, x - 1) .. s .. s_sub(row, x + #s)
end

-- CC's characters are bytes; JSON carries each one as the code point of the same number (Latin-1), so a row keeps
-- one character per cell. The JSON encoder turns valid UTF-8 into code points: encode bytes >= 128 that way.
local function latin1(s)
    return (s:gsub("[\128-\255]", function(c)
        local b = s_byte(c)
        return s_char(0xC0 + floor(b / 64), 0x80 + b % 64)
    end))
end

local Mirror = {}

local DEFAULT_PALETTE = {
    0xf0f0f0, 0xf2b233, 0xe57fd8, 0x99b2f2, 0xdede6c, 0x7fcc19, 0xf2b2cc, 0x4c4c4c,
    0x999999, 0x4c99b2, 0xb266e5, 0x3366cc, 0x7f664c, 0x57a64e, 0xcc4c4c, 0x111111,
}

--- Whether the mirror is on. The computer's own word is `cfg.screen`, else the CC setting @{SETTING} (true, false,
-- or unset); the server's is `server` (its `welcome` and `screen_switch`: true, false or nil). Off on either side
-- wins: a player's local off keeps the screen private whatever the server says, and the server's off is final for
-- it (it refuses the frames). Otherwise one on (either side) turns it on; with no word at all it is off.
-- @tparam[opt] table cfg resolved settings (see @{ccagent.config.resolve})
-- @tparam[opt] boolean server the server's word
-- @treturn boolean
function M.enabled(cfg, server)
    local own
    if cfg and cfg.screen ~= nil then
        own = cfg.screen == true or cfg.screen == "true"
    elseif settings and settings.get then
        own = settings.get(M.SETTING)
    end
    if own == false or server == false then return false end
    return own == true or server == true
end

--- The mirror running on this computer, if any (shared by every program, like the session).
-- @treturn Mirror|nil
function M.current()
    local m = rawget(_G, "ccagent_screen")
    if type(m) == "table" and getmetatable(m) == Mirror then return m end
    return nil
end

--- A mirror of one terminal. Create with @{new}.
-- @type Mirror
Mirror.__index = Mirror

--- Wrap `target` (default `term.native()`) in place: its drawing functions keep working and also update the copy.
-- @tparam[opt] table target a terminal object
-- @tparam[opt] table opts `fps` (frames a second, at most @{MAX_FPS}), `notify` (function called when the screen
--   first changes after a frame; default queues a `ccagent_screen` event)
-- @treturn Mirror
function M.new(target, opts)
    target = target or term.native()
    opts = opts or {}
    local fps = math.min(tonumber(opts.fps) or M.MAX_FPS, M.MAX_FPS)
    local self = setmetatable({
        target = target,
        orig = {},
        interval = 1 / math.max(fps, 0.1),
        seq = 0,
        last_sent = nil,
        rows_dirty = {},
        full = true,
        cursor_dirty = true,
        palette = {},
        palette_dirty = true,
        pending = false,
        frames_sent = 0,
        notify = opts.notify or function() os.queueEvent("ccagent_screen") end,
        -- Windows shown instead of the screen (capture windows of running programs; the last one shows), the
        -- functions wrapped in each, and the rows last sent of the shown one.
        shown = {},
        shown_orig = {},
        shown_rows = {},
        shown_dirty = false,
    }, Mirror)
    rawset(_G, "ccagent_screen", self)
    -- CC's default palette, then what programs set: a terminal's own palette is not read (CraftOS-PC's headless
    -- terminal answers grey for every colour).
    for i = 1, 16 do self.palette[i] = DEFAULT_PALETTE[i] end
    self.fg = digit(target.getTextColour and target.getTextColour() or 1)
    self.bg = digit(target.getBackgroundColour and target.getBackgroundColour() or 32768)
    self.cx, self.cy = target.getCursorPos()
    self.blink = target.getCursorBlink and target.getCursorBlink() or false
    self:_blank(target.getSize())
    self:_install()
    return self
end

function Mirror:_blank(w, h)
    self.w, self.h = w, h
    self.text, self.fgs, self.bgs = {}, {}, {}
    for y = 1, h do
        self.text[y] = s_rep(" ", w)
        self.fgs[y] = s_rep(self.fg, w)
        self.bgs[y] = s_rep(self.bg, w)
    end
    self.full = true
    self.rows_dirty = {}
end

function Mirror:_changed()
    if not self.pending then
        self.pending = true
        self.notify()
    end
end

function Mirror:_row(y)
    if y >= 1 and y <= self.h then
        self.rows_dirty[y] = true
        self:_changed()
        return true
    end
    return false
end

function Mirror:_put(text, fg, bg)
    local y, x = self.cy, self.cx
    if y >= 1 and y <= self.h and #text > 0 then
        self.text[y] = splice(self.text[y], x, text)
        self.fgs[y] = splice(self.fgs[y], x, fg)
        self.bgs[y] = splice(self.bgs[y], x, bg)
        self:_row(y)
    end
    self.cx = x + #text
    self.cursor_dirty = true
end

function Mirror:_fill(y)
    self.text[y] = s_rep(" ", self.w)
    self.fgs[y] = s_rep(self.fg, self.w)
    self.bgs[y] = s_rep(self.bg, self.w)
end

-- The wrappers: call the terminal's own function, then update the copy (never yields).
function Mirror:_install()
    local t, o, me = self.target, self.orig, self
    local function wrap(name, after)
        local f = t[name]
        if type(f) ~= "function" then return end
        o[name] = f
        t[name] = function(...)
            local r = table.pack(f(...))
            after(...)
            return table.unpack(r, 1, r.n)
        end
    end
    wrap("write", function(text)
        local s = tostring(text)
        me:_put(s, s_rep(me.fg, #s), s_rep(me.bg, #s))
    end)
    wrap("blit", function(text, fg, bg)
        if type(text) == "string" and type(fg) == "string" and type(bg) == "string" and #fg == #text
            and #bg == #text then
            me:_put(text, fg:lower(), bg:lower())
        end
    end)
    wrap("clear", function()
        for y = 1, me.h do me:_fill(y) end
        me.full = true
        me:_changed()
    end)
    wrap("clearLine", function()
        if me.cy >= 1 and me.cy <= me.h then
            me:_fill(me.cy)
            me:_row(me.cy)
        end
    end)
    wrap("scroll", function(n)
        n = floor(tonumber(n) or 0)
        if n == 0 then return end
        local text, fgs, bgs = {}, {}, {}
        for y = 1, me.h do
            local from = y + n
            if from >= 1 and from <= me.h then
                text[y], fgs[y], bgs[y] = me.text[from], me.fgs[from], me.bgs[from]
            else
                text[y], fgs[y], bgs[y] = s_rep(" ", me.w), s_rep(me.fg, me.w), s_rep(me.bg, me.w)
            end
        end
        me.text, me.fgs, me.bgs = text, fgs, bgs
        for y = 1, me.h do me.rows_dirty[y] = true end
        me:_changed()
    end)
    wrap("setCursorPos", function(x, y)
        me.cx, me.cy = floor(tonumber(x) or me.cx), floor(tonumber(y) or me.cy)
        me.cursor_dirty = true
        me:_changed()
    end)
    wrap("setCursorBlink", function(b)
        me.blink = b == true
        me.cursor_dirty = true
        me:_changed()
    end)
    local function text_colour(c) me.fg = digit(c) end
    local function back_colour(c) me.bg = digit(c) end
    wrap("setTextColour", text_colour)
    wrap("setTextColor", text_colour)
    wrap("setBackgroundColour", back_colour)
    wrap("setBackgroundColor", back_colour)
    local function palette(c, r, g, b)
        local i = s_sub(HEX, 1, 16):find(digit(c), 1, true)
        if not i then return end
        if g == nil then
            me.palette[i] = floor(tonumber(r) or 0) % 0x1000000
        else
            me.palette[i] = floor(r * 255 + 0.5) * 65536 + floor(g * 255 + 0.5) * 256 + floor(b * 255 + 0.5)
        end
        me.palette_dirty = true
        me:_changed()
    end
    wrap("setPaletteColour", palette)
    wrap("setPaletteColor", palette)
end

--- Put the terminal's own functions back (and those of any window shown).
function Mirror:uninstall()
    for name, f in pairs(self.orig) do self.target[name] = f end
    self.orig = {}
    while #self.shown > 0 do self:unshow(self.shown[#self.shown]) end
    if rawget(_G, "ccagent_screen") == self then rawset(_G, "ccagent_screen", nil) end
end

local DRAWING = { "write", "blit", "clear", "clearLine", "scroll", "setCursorPos", "setCursorBlink",
    "setTextColour", "setTextColor", "setBackgroundColour", "setBackgroundColor" }

--- Show `win` instead of the screen until @{unshow}: a hidden window a program draws into (it needs `getLine`,
-- `getSize` and `getCursorPos`, as CC's windows have). Its drawing calls are wrapped to mark it changed.
-- @tparam table win
function Mirror:show(win)
    if type(win) ~= "table" or type(win.getLine) ~= "function" or self.shown_orig[win] then return end
    local orig, me = {}, self
    for _, name in ipairs(DRAWING) do
        local f = win[name]
        if type(f) == "function" then
            orig[name] = f
            win[name] = function(...)
                local r = table.pack(f(...))
                me.shown_dirty = true
                me:_changed()
                return table.unpack(r, 1, r.n)
            end
        end
    end
    self.shown_orig[win] = orig
    self.shown[#self.shown + 1] = win
    self.shown_rows = {}
    self.full = true
    self:_changed()
end

--- Stop showing `win` (the screen, or the window shown before it, shows again, whole).
-- @tparam table win
function Mirror:unshow(win)
    local orig = self.shown_orig[win]
    if not orig then return end
    for name, f in pairs(orig) do win[name] = f end
    self.shown_orig[win] = nil
    for i = #self.shown, 1, -1 do
        if self.shown[i] == win then table.remove(self.shown, i) end
    end
    self.shown_rows = {}
    self.full = true
    self:_changed()
end

--- Whether anything changed since the last frame.
-- @treturn boolean
function Mirror:has_changes()
    if #self.shown > 0 then return self.full or self.shown_dirty or self.palette_dirty end
    return self.full or self.cursor_dirty or self.palette_dirty or next(self.rows_dirty) ~= nil
end

--- Compare the terminal's size with the copy's; on a change the copy is cropped or padded and a full frame is due.
function Mirror:check_size()
    local w, h = self.target.getSize()
    if w == self.w and h == self.h then return false end
    local text, fgs, bgs = self.text, self.fgs, self.bgs
    self:_blank(w, h)
    for y = 1, math.min(h, #text) do
        self.text[y] = splice(self.text[y], 1, text[y])
        self.fgs[y] = splice(self.fgs[y], 1, fgs[y])
        self.bgs[y] = splice(self.bgs[y], 1, bgs[y])
    end
    self:_changed()
    return true
end

--- Ask for every row in the next frame (after connecting, or when the server refused a frame).
function Mirror:want_full()
    self.full = true
    self:_changed()
end

-- The frame of the window shown (see @{Mirror:show}): its rows as it holds them, those that changed since the last.
function Mirror:_shown_frame(win)
    local w, h = win.getSize()
    local full = self.full or self.shown_w ~= w or self.shown_h ~= h
    local lines = json.array()
    local rows = full and {} or self.shown_rows
    for y = 1, h do
        local text, fg, bg = win.getLine(y)
        local key = text .. "\0" .. fg .. "\0" .. bg
        if full or rows[y] ~= key then
            lines[#lines + 1] = { y = y, text = latin1(text), fg = fg:lower(), bg = bg:lower() }
            rows[y] = key
        end
    end
    self.shown_rows, self.shown_w, self.shown_h = rows, w, h
    local cx, cy = win.getCursorPos()
    local blink = win.getCursorBlink and win.getCursorBlink() or false
    local fgc = win.getTextColour and digit(win.getTextColour()) or self.fg
    return { w = w, h = h, full = full, lines = lines, cursor = { x = cx, y = cy, blink = blink, fg = fgc } }
end

--- The next `screen_frame` message (every row when one is due, else the changed rows), and forget the changes.
-- While a window is shown (@{Mirror:show}) the frame is of that window.
-- @treturn table the message
function Mirror:frame()
    local win = self.shown[#self.shown]
    local f
    if win then
        f = self:_shown_frame(win)
        -- The screen's own changes meanwhile are sent whole when it shows again (unshow asks for a full frame).
        self.shown_dirty = false
    else
        self:check_size()
        local lines = json.array()
        for y = 1, self.h do
            if self.full or self.rows_dirty[y] then
                lines[#lines + 1] = { y = y, text = latin1(self.text[y]), fg = self.fgs[y], bg = self.bgs[y] }
            end
        end
        f = {
            w = self.w,
            h = self.h,
            full = self.full,
            lines = lines,
            cursor = { x = self.cx, y = self.cy, blink = self.blink, fg = self.fg },
        }
    end
    local msg = {
        type = "screen_frame",
        seq = self.seq,
        width = f.w,
        height = f.h,
        full = f.full,
        cursor = f.cursor,
        lines = f.lines,
    }
    if f.full or self.palette_dirty then
        local p = json.array()
        for i = 1, 16 do p[i] = self.palette[i] end
        msg.palette = p
    end
    self.seq = self.seq + 1
    self.full, self.cursor_dirty, self.palette_dirty, self.rows_dirty = false, false, false, {}
    self.pending = false
    return msg
end

--- Send frames to `client` until it stops: a full frame on every (re)connect, then changes at most `fps` a second.
-- A frame is sent only while connected (a screen is resent whole on reconnect, never queued).
-- @tparam table client a @{ccagent.Client}
-- @tparam[opt] function keep checked on every event: the loop ends when it answers false (mirror switched off)
function Mirror:run(client, keep)
    local timer
    local clock = os.clock
    while client.state ~= "stopped" and (not keep or keep()) do
        if not timer and client:is_connected() and self:has_changes() then
            local wait = self.last_sent and (self.last_sent + self.interval - clock()) or 0
            if wait <= 0 then
                self.last_sent = clock()
                if client:send_volatile(self:frame()) then self.frames_sent = self.frames_sent + 1 end
            else
                timer = os.startTimer(wait)
            end
        end
        local ev, a, b = os.pullEvent()
        if ev == "timer" and a == timer then
            timer = nil
        elseif ev == "ccagent_connection" and a == "connected" then
            self:want_full()
        elseif ev == "term_resize" then
            self:check_size()
        elseif ev == "ccagent_error" and type(b) == "string" and b:find("screen_frame", 1, true) then
            self:want_full()
        end
    end
end

return M
