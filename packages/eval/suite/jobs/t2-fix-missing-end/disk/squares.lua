local n = tonumber(arg[1]) or 5
for i = 1, n do
  print(i * i)
