// The Lua driver the CraftOS host tests boot: the real library + agent host from lua-client/src, connected to the
// URL in arg 1, with fast reconnects so the resilience tests stay quick and durable call state like the programs.
import { PRELUDE } from './craftos.js';

/** Lua program: `test-program <ws_url> [sandbox_root]`. */
export const HOST_PROGRAM = `${PRELUDE}
local ccagent = require "ccagent"
local url, root = ...
local client = ccagent.connect(url, { client_id = "craftos-test", reconnect_min = 0.2, reconnect_max = 1,
    state_dir = "/.ccagent/state" })
local _, problems = require("ccagent.host").new(client, { shell = shell, root = root })
for _, p in ipairs(problems or {}) do print("tool problem: " .. tostring(p.name) .. ": " .. tostring(p.error)) end
client:run()
`;
