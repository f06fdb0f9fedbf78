import { done, write } from '../../lib.mjs';

const PROGRAM = `local n = tonumber(arg[1]) or 15
for i = 1, n do
  if i % 15 == 0 then
    print("FizzBuzz")
  elseif i % 3 == 0 then
    print("Fizz")
  elseif i % 5 == 0 then
    print("Buzz")
  else
    print(i)
  end
end
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [write('fizz.lua', PROGRAM, [['fizz.lua', '15']]), done('fizz.lua 15 ends with FizzBuzz.')],
  },
};
