local total = 0
for _, a in ipairs(arg) do
  total = total + tonumber(a)
end
print("Total: " + total)
