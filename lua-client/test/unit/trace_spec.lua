-- Tracebacks given to the model lose the client library's own frames (a small model mistakes them for the bug).
local t = require "helper"
local trace = require "ccagent.trace"

local FULL = table.concat({
    "prog.lua:2: boom",
    "stack traceback:",
    "\t[C]: in function 'error'",
    "\t/prog.lua:2: in function 'inner'",
    "\t/prog.lua:5: in main chunk",
    "\t[C]: in function 'xpcall'",
    "\t/ccagent/ccagent/host.lua:210: in function </ccagent/ccagent/host.lua:209>",
    "\t/ccagent/ccagent/capture.lua:40: in function 'run'",
    "\t/ccagent/ccagent.lua:539: in function <ccagent/ccagent.lua:538>",
}, "\n")

t.test("library frames and the xpcall that called the program are cut; program frames stay", function()
    local trimmed, removed = trace.trim(FULL, "/ccagent")
    t.eq(removed, true)
    t.eq(trimmed, table.concat({
        "prog.lua:2: boom",
        "stack traceback:",
        "\t[C]: in function 'error'",
        "\t/prog.lua:2: in function 'inner'",
        "\t/prog.lua:5: in main chunk",
    }, "\n"))
end)

t.test("frames of a folder that only starts like the library's are kept", function()
    local text = "x\nstack traceback:\n\t/ccagent2/x.lua:1: in main chunk"
    local trimmed, removed = trace.trim(text, "/ccagent")
    t.eq(removed, false)
    t.eq(trimmed, text)
end)

t.test("a text without a traceback is returned unchanged", function()
    local trimmed, removed = trace.trim("just an error", "/ccagent")
    t.eq(trimmed, "just an error")
    t.eq(removed, false)
end)

t.test("a trace made only of library frames keeps its message without an empty header", function()
    local trimmed = trace.trim("oops\nstack traceback:\n\t/ccagent/ccagent/host.lua:1: in function 'x'", "/ccagent")
    t.eq(trimmed, "oops")
end)
