--- Version of the ccagent Lua client and the protocol version it speaks.
-- @module ccagent.version
local M = {}

M.client = "0.1.0"
M.protocol = 1

--- Whether this client can talk to a server that speaks `protocol`.
-- @tparam number protocol the server's protocol version
-- @treturn boolean
function M.compatible(protocol)
    return type(protocol) == "number" and protocol == M.protocol
end

return M
