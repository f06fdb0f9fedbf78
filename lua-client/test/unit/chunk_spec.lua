-- Chunking guards against frames over CC:Tweaked's 128 KiB WebSocket limit (the socket is closed on overflow).
local t = require "helper"
local json = require "ccagent.json"
local chunk = require "ccagent.chunk"

local function big_message(n)
    return json.encode({ type = "command_result", call_id = "c1", task_id = "t1", ok = true,
        result = { content = ('ab"\\\n'):rep(n) } })
end

t.test("a message within the limit is sent as-is", function()
    local frames = chunk.split('{"type":"ping"}', 1024, "x")
    t.same(frames, { '{"type":"ping"}' })
end)

t.test("an oversized message splits into frames that each fit the limit", function()
    local text = big_message(60000)
    local frames = assert(chunk.split(text, 131072, "id-1"))
    t.truthy(#frames >= 3, "several frames, got " .. #frames)
    for i, f in ipairs(frames) do
        t.truthy(#f <= 131072, "frame " .. i .. " is " .. #f .. " bytes")
        local m = json.decode(f)
        t.eq(m.type, "chunk")
        t.eq(m.index, i - 1)
        t.eq(m.count, #frames)
        t.eq(m.chunk_id, "id-1")
    end
end)

t.test("escape-heavy text (quotes/backslashes double when quoted) still fits", function()
    local text = ('"\\'):rep(100000)
    local frames = assert(chunk.split(text, 4096, "q"))
    -- every source byte costs 2 once quoted, so ~2000 per frame: not thousands of 1-byte frames
    t.truthy(#frames <= math.ceil(#text * 2 / 3900), "frames " .. #frames)
    local pieces = {}
    for i, f in ipairs(frames) do
        t.truthy(#f <= 4096, "frame " .. i .. " is " .. #f)
        pieces[i] = json.decode(f).data
    end
    t.eq(table.concat(pieces), text)
end)

t.test("reassembly in order returns the original text", function()
    local text = big_message(40000)
    local r = chunk.reassembler()
    local frames = chunk.split(text, 50000, "k")
    local out
    for i, f in ipairs(frames) do
        local got = r:add(json.decode(f))
        if i < #frames then t.eq(got, nil, "nothing before the last piece") else out = got end
    end
    t.eq(out, text)
    t.eq(r:size(), 0, "nothing left pending")
end)

t.test("reassembly out of order and with a duplicated piece", function()
    local text = big_message(20000)
    local frames = chunk.split(text, 20000, "o")
    local r = chunk.reassembler()
    local out
    t.eq(r:add(json.decode(frames[1])), nil)
    t.eq(r:add(json.decode(frames[1])), nil, "duplicate does not complete")
    for i = #frames, 2, -1 do out = r:add(json.decode(frames[i])) or out end
    t.eq(out, text)
end)

t.test("invalid chunk frames are refused with chunk_error", function()
    local r = chunk.reassembler()
    local _, e1 = r:add({ chunk_id = "a", index = 2, count = 2, data = "" })
    t.truthy(e1 and e1:find("chunk_error"), "index out of range")
    local _, e2 = r:add({ chunk_id = "", index = 0, count = 1, data = "" })
    t.truthy(e2, "empty id")
    local _, e3 = r:add({ chunk_id = "b", index = 0, count = 1.5, data = "" })
    t.truthy(e3, "fractional count")
    local _, e4 = r:add({ chunk_id = "c", index = 0, count = 2, data = 5 })
    t.truthy(e4, "non-string data")
    t.eq(r:add({ chunk_id = "d", index = 0, count = 2, data = "x" }), nil)
    local _, e5 = r:add({ chunk_id = "d", index = 1, count = 3, data = "y" })
    t.truthy(e5 and e5:find("count changed"), "count changed")
    t.eq(r:size(), 0)
end)

t.test("the 16 MiB reassembly cap drops the message", function()
    local r = chunk.reassembler()
    local piece = ("x"):rep(1024 * 1024)
    local err
    for i = 0, 17 do
        local _, e = r:add({ chunk_id = "big", index = i, count = 20, data = piece })
        err = err or e
    end
    t.truthy(err and err:find("16 MiB"), tostring(err))
    t.eq(r:size(), 0)
end)

t.test("at most MAX_PENDING partial messages are kept (oldest dropped)", function()
    local r = chunk.reassembler()
    for i = 1, chunk.MAX_PENDING + 3 do r:add({ chunk_id = "p" .. i, index = 0, count = 2, data = "x" }) end
    t.eq(r:size(), chunk.MAX_PENDING)
    t.eq(r.pending.p1, nil, "oldest dropped")
end)

t.test("a limit too small to carry the envelope is an error, not a loop", function()
    local frames, err = chunk.split(("x"):rep(500), 60, "z")
    t.eq(frames, nil)
    t.truthy(err)
end)

t.done()
