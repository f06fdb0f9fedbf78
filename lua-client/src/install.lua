-- ccagent installer. The orchestrator serves this file at /lua/install.lua with its own address filled in:
--
--     wget run http://HOST:PORT/lua/install.lua [--code CODE | --pair | --token T | --no-token] [--id NAME]
--                                               [--dir /ccagent] [--no-startup] [--no-autostart]
--
-- `--code` is an enrollment code from the operator (`ccagent clients enroll`): the installer trades it for this
-- computer's own key (POST /api/pair) and stores the key as the config's token. `--pair` asks to pair without a
-- code (POST /api/pair/request): the installer shows a match code and waits until the operator approves it
-- (`ccagent clients approve`), then collects the key (POST /api/pair/collect).
--
-- It downloads every file listed in <server>/lua/manifest.json into a staging directory, checks each one's size
-- (and SHA-256 where bit32 is available), swaps the staging directory into place, writes the configuration
-- (/.ccagent/config.json: server and WebSocket URLs, token, client id) and a startup file that puts the
-- ccagent programs on the shell path and, unless disabled, starts the agent host at boot.
-- Standalone on purpose: it runs before the library is on the computer.

local SERVER_URL = "__CCAGENT_SERVER_URL__"
local CONFIG_PATH = "/.ccagent/config.json"
local STARTUP_PATH = "/startup/ccagent.lua"

local M = {}

local function fail(message)
    error(message, 0)
end

-- The ids the orchestrator accepts: printable ASCII (see ccagent.ID_PATTERN).
local ID_PATTERN = "^[A-Za-z0-9%._:@%+%-]+$"

--- Parse the installer's arguments.
-- @tparam {string...} argv
-- @treturn table options (`server`, `token`, `no_token`, `id`, `dir`, `startup`, `autostart`)
function M.parse_args(argv)
    local o = { dir = "/ccagent", startup = true, autostart = true }
    local values = {
        ["--token"] = "token", ["--id"] = "id", ["--dir"] = "dir", ["--server"] = "server", ["--code"] = "code",
    }
    local i = 1
    while i <= #argv do
        local a = argv[i]
        if values[a] then
            if argv[i + 1] == nil then fail(a .. " needs a value") end
            o[values[a]] = argv[i + 1]
            i = i + 2
        elseif a == "--no-token" then
            o.no_token = true
            i = i + 1
        elseif a == "--pair" then
            o.pair = true
            i = i + 1
        elseif a == "--no-startup" then
            o.startup, o.autostart = false, false
            i = i + 1
        elseif a == "--no-autostart" then
            o.autostart = false
            i = i + 1
        else
            fail("unknown argument " .. a ..
                "\nusage: install [--code CODE | --pair | --token T | --no-token] [--id NAME] [--dir DIR]"
                .. " [--no-startup] [--no-autostart]")
        end
    end
    if o.code and (o.token or o.no_token) then
        fail("--code gives this computer its own key: drop --token/--no-token")
    end
    if o.pair and (o.code or o.token or o.no_token) then
        fail("--pair asks the operator for this computer's own key: drop --code/--token/--no-token")
    end
    if o.id and (not o.id:find(ID_PATTERN) or #o.id > 200) then
        fail("--id: use only ASCII letters, digits and . _ - : @ + (at most 200 characters)")
    end
    o.dir = "/" .. fs.combine(o.dir, "")
    if o.dir == "/" or o.dir:find("^/rom") then fail("refusing to install into " .. o.dir) end
    return o
end

--- The orchestrator's WebSocket URL for its HTTP base URL (`http://h:p` → `ws://h:p/ws`).
-- @tparam string server
-- @treturn string
function M.ws_url(server)
    local base = server:gsub("/+$", "")
    return (base:gsub("^http", "ws")) .. "/ws"
end

--- Whether a manifest path is safe to write under the install directory.
-- @tparam string path
-- @treturn boolean
function M.safe_path(path)
    if type(path) ~= "string" or path == "" or path:sub(1, 1) == "/" then return false end
    if not path:find("^[%w_%-%./]+$") then return false end
    for seg in path:gmatch("[^/]+") do
        if seg == ".." or seg == "." then return false end
    end
    return true
end

-- SHA-256 (FIPS 180-4) over bit32, which CC:Tweaked's Lua 5.2 runtime provides.
local K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

--- SHA-256 of a string as lower-case hex, or nil when bit32 is missing.
-- @tparam string msg
-- @treturn string|nil
function M.sha256(msg)
    local b = rawget(_G, "bit32")
    if type(b) ~= "table" then return nil end
    local band, bxor, bnot, rrotate, rshift = b.band, b.bxor, b.bnot, b.rrotate, b.rshift
    local h0, h1, h2, h3, h4, h5, h6, h7 =
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    local len = #msg
    local bits = len * 8
    local tail = {}
    for i = 7, 0, -1 do tail[#tail + 1] = string.char(math.floor(bits / 2 ^ (8 * i)) % 256) end
    msg = msg .. "\128" .. ("\0"):rep((55 - len) % 64) .. table.concat(tail)
    local w = {}
    for start = 1, #msg, 64 do
        for i = 0, 15 do
            local a, c, d, e = msg:byte(start + i * 4, start + i * 4 + 3)
            w[i] = ((a * 256 + c) * 256 + d) * 256 + e
        end
        for i = 16, 63 do
            local x, y = w[i - 15], w[i - 2]
            local s0 = bxor(rrotate(x, 7), rrotate(x, 18), rshift(x, 3))
            local s1 = bxor(rrotate(y, 17), rrotate(y, 19), rshift(y, 10))
            w[i] = (w[i - 16] + s0 + w[i - 7] + s1) % 4294967296
        end
        local a, c, d, e, f, g, hh, k = h0, h1, h2, h3, h4, h5, h6, h7
        for i = 0, 63 do
            local S1 = bxor(rrotate(f, 6), rrotate(f, 11), rrotate(f, 25))
            local ch = bxor(band(f, g), band(bnot(f), hh))
            local t1 = (k + S1 + ch + K[i + 1] + w[i]) % 4294967296
            local S0 = bxor(rrotate(a, 2), rrotate(a, 13), rrotate(a, 22))
            local maj = bxor(band(a, c), band(a, d), band(c, d))
            local t2 = (S0 + maj) % 4294967296
            k, hh, g, f, e, d, c, a = hh, g, f, (e + t1) % 4294967296, d, c, a, (t1 + t2) % 4294967296
        end
        h0, h1, h2, h3 = (h0 + a) % 4294967296, (h1 + c) % 4294967296, (h2 + d) % 4294967296, (h3 + e) % 4294967296
        h4, h5, h6, h7 = (h4 + f) % 4294967296, (h5 + g) % 4294967296, (h6 + hh) % 4294967296, (h7 + k) % 4294967296
    end
    return ("%08x%08x%08x%08x%08x%08x%08x%08x"):format(h0, h1, h2, h3, h4, h5, h6, h7)
end

local function http_get(url, binary)
    local res, err, failed = http.get(url, nil, binary)
    if not res then
        if failed then
            local body = failed.readAll()
            failed.close()
            fail(("GET %s: %s %s"):format(url, tostring(err), body or ""))
        end
        local hint = ""
        if tostring(err):find("not permitted") or tostring(err):find("blocked") then
            hint = "\nCC:Tweaked blocks private addresses by default: add the orchestrator's address to http.rules"
                .. " in the server's computercraft-server.toml (see docs/lua-client.md)."
        end
        fail(("GET %s: %s%s"):format(url, tostring(err), hint))
    end
    local body = res.readAll() or ""
    res.close()
    return body
end

--- The client id the agent host will use: `--id`, the configured one, the label, else `computer-<id>`.
-- @tparam table o parsed options
-- @tparam table cfg the existing configuration
-- @treturn string
function M.client_id(o, cfg)
    if o.id then return o.id end
    -- The orchestrator accepts printable ids only: a label (or an id an older installer took from it) with spaces
    -- or other characters becomes one, each run of them a `-` (as the client library does).
    local function safe(text)
        local id = text:gsub("[^A-Za-z0-9%._:@%+%-]+", "-"):sub(1, 200)
        if id ~= "" and id ~= "-" then return id end
    end
    local id = type(cfg.client_id) == "string" and safe(cfg.client_id)
    if id then return id end
    local label = os.getComputerLabel and os.getComputerLabel()
    id = type(label) == "string" and safe(label)
    if id then return id end
    return "computer-" .. tostring(os.getComputerID and os.getComputerID() or 0)
end

--- Trade an enrollment code for this computer's key (`POST /api/pair`). Nothing is stored here: the caller writes
-- the key into the configuration only once the installation succeeded.
-- @tparam string server orchestrator base URL
-- @tparam string code the enrollment code
-- @tparam string client_id the id this computer asks for (a code naming an id wins)
-- @treturn string key
-- @treturn string client id the key is bound to
function M.pair(server, code, client_id)
    local body = textutils.serializeJSON({ code = code, client_id = client_id })
    local res, err, failed = http.post(server .. "/api/pair", body, { ["Content-Type"] = "application/json" })
    local text
    if res then
        text = res.readAll()
        res.close()
    elseif failed then
        text = failed.readAll()
        failed.close()
    else
        fail("pairing failed: " .. tostring(err))
    end
    local reply = textutils.unserializeJSON(text or "") or {}
    if not res then
        local e = reply.error or {}
        fail(("pairing refused (%s): %s"):format(tostring(e.code or err), tostring(e.message or text)))
    end
    if type(reply.key) ~= "string" or type(reply.client_id) ~= "string" then
        fail("pairing failed: unexpected answer " .. tostring(text))
    end
    return reply.key, reply.client_id
end

--- POST a JSON body; returns the HTTP status and the decoded answer (errors included).
local function post_json(url, body)
    local res, err, failed = http.post(url, textutils.serializeJSON(body), { ["Content-Type"] = "application/json" })
    local r = res or failed
    if not r then fail("cannot reach " .. url .. ": " .. tostring(err)) end
    local status = r.getResponseCode()
    local text = r.readAll()
    r.close()
    return status, textutils.unserializeJSON(text or "") or {}, text
end

--- Pair by request (`--pair`): ask, show the match code, wait for the operator's decision, collect the key.
-- @tparam string server orchestrator base URL
-- @tparam string client_id the id this computer asks for
-- @tparam[opt] number poll seconds between polls (default 2)
-- @treturn string key
-- @treturn string client id the key is bound to
function M.pair_by_request(server, client_id, poll)
    local status, reply, text = post_json(server .. "/api/pair/request", { client_id = client_id })
    if status ~= 202 or type(reply.secret) ~= "string" then
        local e = reply.error or {}
        fail(("pairing request refused (%s): %s"):format(tostring(e.code or status), tostring(e.message or text)))
    end
    print(("ccagent: asked to pair as %s; match code %s"):format(client_id, reply.match))
    print("  the operator approves it with: ccagent clients approve " .. reply.request_id)
    print("  waiting for approval (Ctrl+T to stop)...")
    local ask = { request_id = reply.request_id, secret = reply.secret }
    while true do
        local st, got, raw = post_json(server .. "/api/pair/collect", ask)
        if st == 200 and type(got.key) == "string" and type(got.client_id) == "string" then
            return got.key, got.client_id
        elseif st ~= 202 then
            local e = got.error or {}
            fail(("pairing refused (%s): %s"):format(tostring(e.code or st), tostring(e.message or raw)))
        end
        sleep(poll or 2)
    end
end

local function write_file(path, data)
    local h, err = fs.open(path, "wb")
    if not h then fail("cannot write " .. path .. ": " .. tostring(err)) end
    h.write(data)
    h.close()
end

local function read_json(path)
    if not fs.exists(path) then return nil end
    local h = fs.open(path, "r")
    if not h then return nil end
    local text = h.readAll()
    h.close()
    local ok, value = pcall(textutils.unserializeJSON, text)
    return ok and type(value) == "table" and value or nil
end

--- Download and verify every manifest file into `staging`.
-- @tparam string server base URL
-- @tparam table manifest decoded manifest
-- @tparam string staging directory
-- @treturn number files written
function M.download(server, manifest, staging)
    if type(manifest) ~= "table" or type(manifest.files) ~= "table" or #manifest.files == 0 then
        fail("the manifest lists no files")
    end
    local count = 0
    for _, f in ipairs(manifest.files) do
        if not M.safe_path(f.path) then fail("unsafe path in manifest: " .. tostring(f.path)) end
        if f.path ~= "install.lua" then
            local data = http_get(server .. "/lua/files/" .. f.path, true)
            if type(f.size) == "number" and #data ~= f.size then
                fail(("%s: got %d bytes, the manifest says %d"):format(f.path, #data, f.size))
            end
            local sum = type(f.sha256) == "string" and M.sha256(data)
            if sum and sum ~= f.sha256:lower() then fail(f.path .. ": SHA-256 mismatch (download corrupted?)") end
            local target = fs.combine(staging, f.path)
            local dir = fs.getDir(target)
            if dir ~= "" and not fs.exists(dir) then fs.makeDir(dir) end
            write_file(target, data)
            count = count + 1
            print(("  %-34s %7d bytes"):format(f.path, #data))
        end
    end
    return count
end

local function startup_source(dir, autostart)
    local programs = fs.combine(dir, "programs")
    return table.concat({
        "-- ccagent: written by the installer; safe to delete (then also delete " .. dir .. ").",
        ("shell.setPath(shell.path() .. \":/%s\")"):format(programs),
        "if settings.get(\"ccagent.autostart\", " .. tostring(autostart) .. ") then",
        ("    local host = \"/%s/ccagent-host.lua\""):format(programs),
        "    if multishell then",
        "        multishell.setTitle(shell.openTab(host), \"ccagent\")",
        "    else",
        "        -- no tabs on a basic computer: serve quietly beside a new shell",
        "        parallel.waitForAny(function() shell.run(host, \"--quiet\") end,",
        "            function() shell.run(\"/rom/programs/shell.lua\") end)",
        "        os.shutdown()",
        "    end",
        "end",
        "",
    }, "\n")
end

--- Run the installation.
-- @tparam {string...} argv
function M.main(argv)
    local o = M.parse_args(argv)
    local server = o.server or SERVER_URL
    if server:sub(1, 2) == "__" then fail("no server address: pass --server http://HOST:PORT") end
    server = server:gsub("/+$", "")
    if not http then fail("the HTTP API is disabled on this server (http.enabled in computercraft-server.toml)") end
    print("ccagent: installing from " .. server)

    local manifest = textutils.unserializeJSON(http_get(server .. "/lua/manifest.json", false))
    local staging = o.dir .. ".new"
    if fs.exists(staging) then fs.delete(staging) end
    fs.makeDir(staging)
    local ok, err = pcall(M.download, server, manifest, staging)
    if not ok then
        fs.delete(staging)
        fail("install failed, nothing changed: " .. tostring(err))
    end
    local count = err
    local cfg = read_json(CONFIG_PATH) or {}
    local key, paired_id
    if o.code or o.pair then
        ok, err = pcall(function()
            if o.code then
                key, paired_id = M.pair(server, o.code, M.client_id(o, cfg))
            else
                key, paired_id = M.pair_by_request(server, M.client_id(o, cfg))
            end
        end)
        if not ok then
            fs.delete(staging)
            fail("install failed, nothing changed: " .. tostring(err))
        end
    end
    local old = o.dir .. ".old"
    if fs.exists(old) then fs.delete(old) end
    if fs.exists(o.dir) then fs.move(o.dir, old) end
    fs.move(staging, o.dir)
    if fs.exists(old) then fs.delete(old) end

    cfg.server_url = server
    cfg.ws_url = M.ws_url(server)
    if o.id then cfg.client_id = o.id end
    if key then
        -- The key is bound to this id: keep both, so a later label change does not break the pairing.
        cfg.client_id = paired_id
        cfg.token = key
        print("ccagent: paired as " .. paired_id)
    elseif o.token then
        cfg.token = o.token
    elseif o.no_token then
        cfg.token = nil
    elseif cfg.token == nil then
        write("Orchestrator token (empty for none): ")
        local t = read("*")
        if t and t ~= "" then cfg.token = t end
    end
    if not fs.exists(fs.getDir(CONFIG_PATH)) then fs.makeDir(fs.getDir(CONFIG_PATH)) end
    write_file(CONFIG_PATH, textutils.serializeJSON(cfg))

    local programs = "/" .. fs.combine(o.dir, "programs")
    if o.startup then
        if not fs.exists("/startup") then fs.makeDir("/startup") end
        write_file(STARTUP_PATH, startup_source(o.dir, o.autostart))
        settings.set("ccagent.autostart", o.autostart)
        settings.save()
    end
    if shell and not (":" .. shell.path() .. ":"):find(":" .. programs .. ":", 1, true) then
        shell.setPath(shell.path() .. ":" .. programs)
    end
    print(("ccagent: %d files in %s, config in %s"):format(count, o.dir, CONFIG_PATH))
    print("  ccagent       chat with the orchestrator")
    print("  ccagent-host  serve this computer's tools")
    if o.autostart then print("The host starts at every boot (set ccagent.autostart false to stop).") end
end

local argv = { ... }
if argv[1] == "--module" then return M end -- loaded by the unit tests
M.main(argv)
