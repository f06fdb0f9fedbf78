-- luacheck configuration for CC:Tweaked Lua (Lua 5.2 semantics on the Cobalt VM).
-- Run through `npm run lint` (test/lint-lua.mjs), which also rejects Lua 5.3+ syntax.
std = "lua52"
max_line_length = 120
codes = true

-- CC:Tweaked's globals (https://tweaked.cc): APIs and the functions bios.lua adds.
read_globals = {
    "bit32", "colors", "colours", "commands", "disk", "fs", "gps", "help", "http", "io", "keys", "multishell",
    "paintutils", "parallel", "peripheral", "pocket", "rednet", "redstone", "rs", "settings", "shell", "term",
    "textutils", "turtle", "vector", "window",
    "printError", "read", "sleep", "write",
    os = {
        fields = {
            "pullEvent", "pullEventRaw", "queueEvent", "startTimer", "cancelTimer", "setAlarm", "cancelAlarm",
            "epoch", "day", "time", "clock", "getComputerID", "computerID", "getComputerLabel", "computerLabel",
            "setComputerLabel", "shutdown", "reboot", "version", "run", "loadAPI", "unloadAPI", "sleep", "date",
        },
        other_fields = false,
    },
}

files["test/**/*.lua"] = {
    -- the unit tier installs small stand-ins for CC globals under plain Lua 5.2
    globals = { "fs", "http", "os", "textutils" },
}
exclude_files = { "node_modules" }
