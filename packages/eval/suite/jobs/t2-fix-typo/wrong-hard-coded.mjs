import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'prints the example greeting whatever the argument',
  replies: {
    planner: [
      write('greet.lua', 'print("Hello, Steve!")\n', [['greet.lua', 'Steve']]),
      done('greet.lua works.'),
    ],
  },
};
