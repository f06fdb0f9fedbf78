import { done, write } from '../../lib.mjs';

const PROGRAM = `local path = arg[1]
local f = fs.open(path, "r")
if not f then
  print("no such file: " .. tostring(path))
  return
end
local text = f.readAll() or ""
f.close()
local n = 0
for _ in text:gmatch("%S+") do
  n = n + 1
end
print(n)
`;
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('sample.txt', 'one two  three\nfour\n'),
      write('wc.lua', PROGRAM, [['wc.lua', 'sample.txt']]),
      done('wc.lua sample.txt prints 4.'),
    ],
  },
};
