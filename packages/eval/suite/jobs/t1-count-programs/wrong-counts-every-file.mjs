import { done, shell, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'counts every file in the folder (5), not only the .lua programs',
  replies: { planner: [shell('ls progs'), write('answer.txt', '5\n'), done('There are 5 programs.')] },
};
