import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'sorts the arguments as text: right for 3 1 2, wrong for 10 9',
  replies: {
    planner: [
      write('sort.lua', 'local t = { ... }\ntable.sort(t)\nprint(table.concat(t, " "))\n', [
        ['sort.lua', '3', '1', '2'],
      ]),
      done('sort.lua 3 1 2 prints 1 2 3.'),
    ],
  },
};
