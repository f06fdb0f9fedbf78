import { done, write } from '../../lib.mjs';

// Right for single spaces on one line; wrong for double blanks, line breaks and empty files.
const WRONG = `local f = fs.open(arg[1], "r")
local text = f.readAll() or ""
f.close()
local _, spaces = text:gsub(" ", "")
print(spaces + 1)
`;
export default {
  loop: 'planner-executor',
  why: 'counts spaces plus one',
  replies: {
    planner: [
      write('sample.txt', 'one two three four'),
      write('wc.lua', WRONG, [['wc.lua', 'sample.txt']]),
      done('wc.lua sample.txt prints 4.'),
    ],
  },
};
