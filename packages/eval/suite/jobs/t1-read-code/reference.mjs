import { done, write } from '../../lib.mjs';

// The planner sees data.txt (the task names it, so it is read before the first prompt) and writes the code.
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('answer.txt', 'copper-42\n'),
      done('answer.txt holds copper-42, the code from data.txt.'),
    ],
  },
};
