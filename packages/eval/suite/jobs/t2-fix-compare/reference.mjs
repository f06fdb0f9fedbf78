import { done, run, write } from '../../lib.mjs';

const FIXED = `local n = tonumber(arg[1])
if n > 10 then
  print(n .. " is big")
else
  print(n .. " is small")
end
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('big.lua', ['12'], '12 is big'),
      write('big.lua', FIXED, [
        ['big.lua', '12'],
        ['big.lua', '3'],
      ]),
      done('arg[1] is a string; tonumber makes the comparison work. 12 is big, 3 is small.'),
    ],
  },
};
