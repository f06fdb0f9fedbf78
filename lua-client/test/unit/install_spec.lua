-- The installer's pure parts (loaded with --module, so nothing is downloaded): SHA-256 against FIPS 180-4 test
-- vectors, argument parsing, and the manifest path check that keeps a hostile server from writing outside /ccagent.
local t = require "helper"

fs = { combine = function(a, b) -- the one fs function parse_args needs, as CC's fs.combine behaves
    local parts = {}
    for seg in (a .. "/" .. b):gmatch("[^/]+") do
        if seg == ".." then parts[#parts] = nil elseif seg ~= "." then parts[#parts + 1] = seg end
    end
    return table.concat(parts, "/")
end }

local install = assert(loadfile("src/install.lua"))("--module")

t.test("sha256 matches the standard test vectors (guards: accepting corrupted downloads)", function()
    t.eq(install.sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    t.eq(install.sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    t.eq(install.sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    t.eq(install.sha256(("a"):rep(1000)), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    -- 55/56/64 bytes: the padding edge cases (digests from coreutils sha256sum)
    t.eq(install.sha256(("x"):rep(55)), "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072")
    t.eq(install.sha256(("x"):rep(56)), "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e")
    t.eq(install.sha256(("x"):rep(64)), "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c")
end)

t.test("arguments: token, id, dir, startup flags; unknown ones refused", function()
    local o = install.parse_args({ "--token", "t0k", "--id", "miner", "--dir", "/apps/cc/", "--no-autostart" })
    t.same({ o.token, o.id, o.dir, o.startup, o.autostart }, { "t0k", "miner", "/apps/cc", true, false })
    local d = install.parse_args({})
    t.same({ d.dir, d.startup, d.autostart }, { "/ccagent", true, true })
    t.eq(install.parse_args({ "--no-startup" }).autostart, false)
    t.raises(function() install.parse_args({ "--bogus" }) end, "unknown argument")
    t.eq(install.parse_args({ "--code", "ABCDE-FGHJK" }).code, "ABCDE-FGHJK")
    t.raises(function() install.parse_args({ "--code", "X", "--token", "t" }) end, "own key")
    t.eq(install.parse_args({ "--pair" }).pair, true)
    t.raises(function() install.parse_args({ "--pair", "--code", "X" }) end, "--pair asks")
    t.raises(function() install.parse_args({ "--token" }) end, "needs a value")
    t.raises(function() install.parse_args({ "--id", "my turtle" }) end, "id: use only ASCII")
    t.raises(function() install.parse_args({ "--id", "pc\27[31m" }) end, "id: use only ASCII")
    t.raises(function() install.parse_args({ "--dir", "/" }) end, "refusing")
    t.raises(function() install.parse_args({ "--dir", "/rom/x" }) end, "refusing")
end)

t.test("manifest paths must stay inside the install directory", function()
    t.truthy(install.safe_path("ccagent/json.lua"))
    t.truthy(install.safe_path("programs/ccagent-host.lua"))
    t.truthy(not install.safe_path("../startup.lua"))
    t.truthy(not install.safe_path("a/../../b.lua"))
    t.truthy(not install.safe_path("/startup.lua"))
    t.truthy(not install.safe_path("a b.lua"))
    t.truthy(not install.safe_path(""))
    t.truthy(not install.safe_path(nil))
end)

t.test("the WebSocket URL is the server's /ws endpoint", function()
    t.eq(install.ws_url("http://127.0.0.1:7420"), "ws://127.0.0.1:7420/ws")
    t.eq(install.ws_url("https://cc.example.org/"), "wss://cc.example.org/ws")
end)

t.done()
