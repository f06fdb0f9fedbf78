-- Small stand-ins for the CraftOS globals the library touches (os events/timers, http.websocketAsync, a
-- websocket handle), so the pure logic runs under plain Lua 5.2. They record what the library did; the
-- CraftOS tier (test/craftos/*.test.ts) runs the same files against the real APIs.
local M = {}

M.events = {}
M.timers = {}
M.cancelled = {}
M.opened = {}
M.clock = 1000000
local next_timer = 0

os.queueEvent = function(...) M.events[#M.events + 1] = table.pack(...) end
os.startTimer = function(secs)
    next_timer = next_timer + 1
    M.timers[next_timer] = secs
    return next_timer
end
os.cancelTimer = function(id) M.cancelled[id] = true end
os.epoch = function() return M.clock end
os.getComputerID = function() return 7 end
os.getComputerLabel = function() return M.label end
os.pullEventRaw = function(filter) return coroutine.yield(filter) end
os.pullEvent = os.pullEventRaw

http = {
    websocketAsync = function(url, headers)
        M.opened[#M.opened + 1] = { url = url, headers = headers }
        return true
    end,
}

--- Reset recorded events (keeps timers counting up so ids stay unique).
function M.reset()
    M.events, M.timers, M.cancelled, M.opened = {}, {}, {}, {}
end

--- Events queued with a given name.
function M.events_named(name)
    local out = {}
    for _, e in ipairs(M.events) do
        if e[1] == name then out[#out + 1] = e end
    end
    return out
end

--- A fake websocket handle recording sent frames.
function M.socket()
    local ws = { sent = {}, closed = false }
    ws.send = function(text)
        if ws.closed then error("attempt to use a closed file", 0) end
        ws.sent[#ws.sent + 1] = text
    end
    ws.close_calls = 0
    ws.close = function()
        ws.close_calls = ws.close_calls + 1
        ws.closed = true
    end
    return ws
end

return M
