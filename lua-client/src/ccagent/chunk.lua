--- Splitting and reassembling messages larger than the WebSocket frame limit.
--
-- The protocol's `chunk` frame is `{type="chunk", chunk_id, index, count, data}`:
-- the `data` strings of indexes 0 .. count-1 concatenate to the original JSON
-- text. Every chunk frame, once encoded, stays within the limit.
--
-- @module ccagent.chunk
local json = require "ccagent.json"

local M = {}

--- Largest reassembled message accepted (16 MiB, as the protocol says).
M.MAX_TOTAL = 16 * 1024 * 1024

--- Most partial messages kept at once; the oldest is dropped beyond it.
M.MAX_PENDING = 8

local function frame(chunk_id, index, count, data)
    return json.encode({ type = "chunk", chunk_id = chunk_id, index = index, count = count, data = data })
end

--- Split JSON text into chunk frames, each at most `max_bytes` long.
-- Text already within the limit is returned as the only element, unchanged.
-- @tparam string text the (ASCII) JSON text of one message
-- @tparam number max_bytes the frame limit
-- @tparam string chunk_id an id unique for this message
-- @treturn[1] {string...} the frames to send, in order
-- @treturn[2] nil
-- @treturn[2] string why it cannot be split
function M.split(text, max_bytes, chunk_id)
    if #text <= max_bytes then return { text } end
    -- Envelope size with the widest index/count we could need.
    local overhead = #frame(chunk_id, #text, #text, "")
    local budget = max_bytes - overhead
    if budget < 16 then return nil, "max_message_bytes too small to chunk" end
    local pieces, pos, n = {}, 1, #text
    while pos <= n do
        local size = budget
        local piece, encoded
        while true do
            piece = text:sub(pos, pos + size - 1)
            encoded = #json.encode(piece) - 2 -- without the quotes
            if encoded <= budget then break end
            -- Escapes grow the piece: shrink in proportion (one escaped byte costs two) and try again.
            local smaller = math.floor(#piece * budget / encoded)
            if smaller >= #piece then smaller = #piece - 1 end
            size = math.max(smaller, 1)
        end
        pieces[#pieces + 1] = piece
        pos = pos + #piece
    end
    local frames = {}
    for i = 1, #pieces do frames[i] = frame(chunk_id, i - 1, #pieces, pieces[i]) end
    return frames
end

--- A reassembler for incoming chunk frames.
-- @type Reassembler
local Reassembler = {}
Reassembler.__index = Reassembler

--- Create a reassembler.
-- @treturn Reassembler
function M.reassembler()
    return setmetatable({ pending = {}, order = {}, rejected = {}, rejected_order = {} }, Reassembler)
end

local function is_int(v)
    return type(v) == "number" and v == math.floor(v)
end

--- Feed one decoded chunk frame.
-- @tparam table msg the decoded `chunk` message
-- @treturn[1] string|nil the whole JSON text once the last piece arrived, else nil
-- @treturn[2] nil
-- @treturn[2] string a `chunk_error` reason when the frame is invalid (that message is dropped)
function Reassembler:add(msg)
    local id, index, count, data = msg.chunk_id, msg.index, msg.count, msg.data
    if type(id) ~= "string" or id == "" then return nil, "chunk_error: chunk_id must be a non-empty string" end
    if not is_int(count) or count < 1 then return nil, "chunk_error: count must be a positive integer" end
    if not is_int(index) or index < 0 or index >= count then return nil, "chunk_error: index out of range" end
    if type(data) ~= "string" then return nil, "chunk_error: data must be a string" end
    -- Later pieces of a message already refused are ignored, not restarted.
    if self.rejected[id] then return nil end
    local p = self.pending[id]
    if not p then
        p = { count = count, parts = {}, got = 0, size = 0 }
        self.pending[id] = p
        self.order[#self.order + 1] = id
        while #self.order > M.MAX_PENDING do
            self.pending[table.remove(self.order, 1)] = nil
        end
    elseif p.count ~= count then
        self:reject(id)
        return nil, "chunk_error: count changed within chunk_id " .. id
    end
    if p.parts[index + 1] == nil then
        p.got = p.got + 1
        p.size = p.size + #data
    end
    p.parts[index + 1] = data
    if p.size > M.MAX_TOTAL then
        self:reject(id)
        return nil, "chunk_error: reassembled message exceeds 16 MiB"
    end
    if p.got < p.count then return nil end
    self:drop(id)
    return table.concat(p.parts)
end

--- Forget a partial message.
-- @tparam string id the chunk_id
function Reassembler:drop(id)
    self.pending[id] = nil
    for i = #self.order, 1, -1 do
        if self.order[i] == id then table.remove(self.order, i) end
    end
end

--- Forget a partial message and ignore its remaining pieces.
-- @tparam string id the chunk_id
function Reassembler:reject(id)
    self:drop(id)
    self.rejected[id] = true
    self.rejected_order[#self.rejected_order + 1] = id
    if #self.rejected_order > 32 then self.rejected[table.remove(self.rejected_order, 1)] = nil end
end

--- Forget every partial message (after a reconnect the sender starts over).
function Reassembler:clear()
    self.pending, self.order = {}, {}
end

--- Number of partial messages held.
-- @treturn number
function Reassembler:size()
    return #self.order
end

return M
