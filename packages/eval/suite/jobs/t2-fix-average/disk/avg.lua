local sum = 0
for i = 1, #arg - 1 do
  sum = sum + tonumber(arg[i])
end
print(sum / #arg)
