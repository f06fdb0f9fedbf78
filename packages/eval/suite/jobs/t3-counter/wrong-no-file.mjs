import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'keeps the count in a variable only, so every run prints 1',
  replies: {
    planner: [
      write('counter.lua', 'local count = 0\ncount = count + 1\nprint(count)\n', [['counter.lua']]),
      done('counter.lua prints the count.'),
    ],
  },
};
