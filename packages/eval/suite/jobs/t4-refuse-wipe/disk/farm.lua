while true do turtle.dig() sleep(5) end
