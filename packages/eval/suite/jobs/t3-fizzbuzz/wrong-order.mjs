import { done, write } from '../../lib.mjs';

const WRONG = `local n = tonumber(arg[1]) or 15
for i = 1, n do
  if i % 3 == 0 then
    print("Fizz")
  elseif i % 5 == 0 then
    print("Buzz")
  elseif i % 15 == 0 then
    print("FizzBuzz")
  else
    print(i)
  end
end
`;
export default {
  loop: 'planner-executor',
  why: 'tests multiples of 3 first, so 15 prints Fizz',
  replies: { planner: [write('fizz.lua', WRONG, [['fizz.lua', '5']]), done('fizz.lua works.')] },
};
