import { done, write } from '../../lib.mjs';

const MODULE = `local M = {}

function M.clamp(x, lo, hi)
  if x < lo then return lo end
  if x > hi then return hi end
  return x
end

return M
`;
const MAIN = `local mathx = require("mathx")
local x, lo, hi = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3])
print(mathx.clamp(x, lo, hi))
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('mathx.lua', MODULE),
      write('main.lua', MAIN, [
        ['main.lua', '15', '0', '10'],
        ['main.lua', '5', '0', '10'],
      ]),
      done('mathx.clamp limits x to lo..hi; main.lua 15 0 10 prints 10, main.lua 5 0 10 prints 5.'),
    ],
  },
};
