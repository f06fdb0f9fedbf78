import { done, write } from '../../lib.mjs';

const WRONG = `local total = 0
for _, a in ipairs(arg) do
  total = total + tonumber(a)
end
print(total)
`;
export default {
  loop: 'planner-executor',
  why: 'prints the bare sum without "Total: "',
  replies: {
    planner: [write('total.lua', WRONG, [['total.lua', '4', '5', '6']]), done('Fixed: it prints 15.')],
  },
};
