import { done, shell, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      shell('ls progs', 'the files in progs'),
      write('answer.txt', '3\n'),
      done('progs holds door.lua, farm.lua and mine.lua: 3 programs.'),
    ],
  },
};
