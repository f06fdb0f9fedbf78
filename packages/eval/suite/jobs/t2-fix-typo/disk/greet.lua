local name = arg[1] or "world"
prnt("Hello, " .. name .. "!")
