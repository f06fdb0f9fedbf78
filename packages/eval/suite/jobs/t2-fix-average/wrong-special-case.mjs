import { done, write } from '../../lib.mjs';

const WRONG = `local sum = 0
for i = 1, #arg - 1 do
  sum = sum + tonumber(arg[i])
end
print(sum / #arg + 2)
`;
export default {
  loop: 'planner-executor',
  why: 'adds 2 to the wrong result, which is right only for 2 4 6',
  replies: {
    planner: [write('avg.lua', WRONG, [['avg.lua', '2', '4', '6']]), done('avg.lua 2 4 6 prints 4 now.')],
  },
};
