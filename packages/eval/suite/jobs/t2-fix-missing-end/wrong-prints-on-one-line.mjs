import { done, write } from '../../lib.mjs';

const WRONG = `local n = tonumber(arg[1]) or 5
local out = {}
for i = 1, n do
  out[#out + 1] = i * i
end
print(table.concat(out, ", "))
`;
export default {
  loop: 'planner-executor',
  why: 'prints the squares on one line, separated by commas',
  replies: {
    planner: [write('squares.lua', WRONG, [['squares.lua', '3']]), done('squares.lua 3 prints 1, 4, 9.')],
  },
};
