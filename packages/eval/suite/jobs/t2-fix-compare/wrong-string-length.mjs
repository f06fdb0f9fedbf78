import { done, write } from '../../lib.mjs';

// Passes the model's own tests (12 and 3) but not 10, which has two digits.
const WRONG = `local n = arg[1]
if #n > 1 then
  print(n .. " is big")
else
  print(n .. " is small")
end
`;
export default {
  loop: 'planner-executor',
  why: 'compares the number of digits: right for 12 and 3, wrong for 10',
  replies: {
    planner: [
      write('big.lua', WRONG, [
        ['big.lua', '12'],
        ['big.lua', '3'],
      ]),
      done('big.lua works for 12 and 3.'),
    ],
  },
};
