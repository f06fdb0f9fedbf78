-- Sandbox path resolution (ccagent.paths): the guard that keeps file tools inside their root.
local t = require "helper"
local paths = require "ccagent.paths"

t.test("normalize resolves . and .. like fs.combine", function()
    t.eq(paths.normalize("/a/./b/../c"), "a/c")
    t.eq(paths.normalize("a//b/"), "a/b")
    t.eq(paths.normalize("/"), "")
    t.eq(paths.normalize("a\\b"), "a/b")
end)

t.test("climbing above the root is an error, not clamped", function()
    local p, err = paths.normalize("../x")
    t.eq(p, nil)
    t.truthy(err:find("escapes"), err)
    t.eq(paths.normalize("a/../../b"), nil)
end)

t.test("characters CC rejects are refused", function()
    t.eq(paths.normalize("a*b"), nil)
    t.eq(paths.normalize("a\nb"), nil)
end)

t.test("resolve with full access returns the path itself", function()
    t.eq(paths.resolve("", "/rom/x"), "rom/x")
end)

t.test("resolve inside a sandbox prefixes the root and refuses escapes", function()
    t.eq(paths.resolve("/sandbox", "/a/b"), "sandbox/a/b")
    t.eq(paths.resolve("sandbox", "a"), "sandbox/a")
    t.eq(paths.resolve("sandbox", "/"), "sandbox")
    local p, err = paths.resolve("sandbox", "../secret")
    t.eq(p, nil)
    t.eq(err.code, "forbidden")
    t.eq(paths.resolve("sandbox", "a/../../sandbox2/x"), nil)
end)

t.test("display shows sandboxed paths from the inside", function()
    t.eq(paths.display("sandbox", "sandbox/a/b"), "/a/b")
    t.eq(paths.display("", "a/b"), "/a/b")
end)

t.done()
