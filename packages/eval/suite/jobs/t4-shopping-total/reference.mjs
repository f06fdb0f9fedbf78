import { done, write } from '../../lib.mjs';

const PROGRAM = `local function lines(path)
  local out = {}
  local f = fs.open(path, "r")
  if not f then return out end
  for line in (f.readAll() or ""):gmatch("[^\\n]+") do
    out[#out + 1] = line
  end
  f.close()
  return out
end

local prices = {}
for _, line in ipairs(lines("prices.txt")) do
  local item, price = line:match("^%s*(.-)%s*=%s*(%d+)")
  if item then prices[item] = tonumber(price) end
end

local total = 0
for _, item in ipairs(lines("items.txt")) do
  total = total + (prices[item] or 0)
end
print(total)
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [write('total.lua', PROGRAM, [['total.lua']]), done('total.lua prints 9 for these files.')],
  },
};
