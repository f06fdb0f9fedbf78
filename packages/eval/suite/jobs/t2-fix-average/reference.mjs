import { done, run, write } from '../../lib.mjs';

const FIXED = `local sum = 0
for i = 1, #arg do
  sum = sum + tonumber(arg[i])
end
print(sum / #arg)
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('avg.lua', ['2', '4', '6'], '4'),
      write('avg.lua', FIXED, [
        ['avg.lua', '2', '4', '6'],
        ['avg.lua', '1', '2'],
      ]),
      done('The loop stopped at #arg - 1; now avg.lua 2 4 6 prints 4.'),
    ],
  },
};
