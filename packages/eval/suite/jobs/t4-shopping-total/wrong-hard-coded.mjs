import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'prints the example total instead of reading the files',
  replies: { planner: [write('total.lua', 'print(9)\n', [['total.lua']]), done('total.lua prints 9.')] },
};
