local version = require "ccagent.version"

local function check(name, cond)
    print((cond and "ok - " or "not ok - ") .. name)
end

check("speaks protocol 1", version.protocol == 1)
check("accepts the same protocol version", version.compatible(1))
check("refuses another protocol version", not version.compatible(2))
check("refuses a non-number version", not version.compatible("1"))
