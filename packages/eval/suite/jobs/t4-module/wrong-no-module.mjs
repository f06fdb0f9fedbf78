import { done, write } from '../../lib.mjs';

const MAIN = `local x, lo, hi = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3])
print(math.min(math.max(x, lo), hi))
`;
export default {
  loop: 'planner-executor',
  why: 'writes main.lua without the mathx module',
  replies: {
    planner: [write('main.lua', MAIN, [['main.lua', '15', '0', '10']]), done('main.lua prints 10.')],
  },
};
