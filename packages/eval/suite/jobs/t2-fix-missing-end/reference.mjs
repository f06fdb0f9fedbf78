import { done, run, write } from '../../lib.mjs';

const FIXED = `local n = tonumber(arg[1]) or 5
for i = 1, n do
  print(i * i)
end
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('squares.lua', ['3'], '1 4 9'),
      write('squares.lua', FIXED, [['squares.lua', '3']]),
      done('The for loop had no end; squares.lua 3 prints 1, 4, 9.'),
    ],
  },
};
