import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'guesses a colour instead of asking',
  replies: {
    planner: [write('lamp.lua', 'print("lamp colour: red")\n', [['lamp.lua']]), done('lamp.lua prints red.')],
  },
};
