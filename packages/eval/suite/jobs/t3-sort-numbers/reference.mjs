import { done, write } from '../../lib.mjs';

const PROGRAM = `local nums = {}
for i, a in ipairs(arg) do
  nums[i] = tonumber(a)
end
table.sort(nums)
print(table.concat(nums, " "))
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('sort.lua', PROGRAM, [
        ['sort.lua', '3', '1', '2'],
        ['sort.lua', '10', '9'],
      ]),
      done('sort.lua 3 1 2 prints 1 2 3 and sort.lua 10 9 prints 9 10.'),
    ],
  },
};
