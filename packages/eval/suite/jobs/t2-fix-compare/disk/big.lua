local n = arg[1]
if n > 10 then
  print(n .. " is big")
else
  print(n .. " is small")
end
