import { done, run, write } from '../../lib.mjs';

const FIXED = `local total = 0
for _, a in ipairs(arg) do
  total = total + tonumber(a)
end
print("Total: " .. total)
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('total.lua', ['4', '5', '6'], 'Total: 15'),
      write('total.lua', FIXED, [['total.lua', '4', '5', '6'], ['total.lua']]),
      done('Lua joins strings with .., not +; total.lua 4 5 6 prints Total: 15.'),
    ],
  },
};
