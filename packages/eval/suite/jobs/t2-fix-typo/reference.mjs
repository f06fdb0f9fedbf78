import { done, run, write } from '../../lib.mjs';

const FIXED = 'local name = arg[1] or "world"\nprint("Hello, " .. name .. "!")\n';
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('greet.lua', ['Steve'], 'Hello, Steve!'),
      write('greet.lua', FIXED, [['greet.lua', 'Steve'], ['greet.lua']]),
      done(
        'prnt was a typo for print; greet.lua Steve prints Hello, Steve! and greet.lua prints Hello, world!',
      ),
    ],
  },
};
