import { done, write } from '../../lib.mjs';

const PROGRAM = `local count = 0
local f = fs.open("count.txt", "r")
if f then
  count = tonumber(f.readAll()) or 0
  f.close()
end
count = count + 1
f = fs.open("count.txt", "w")
f.write(tostring(count))
f.close()
print(count)
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('counter.lua', PROGRAM, [['counter.lua'], ['counter.lua']]),
      done('counter.lua printed 1 then 2; the count is kept in count.txt.'),
    ],
  },
};
