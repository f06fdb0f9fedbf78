import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'writes the number of chests instead of the code, and claims success',
  replies: { planner: [write('answer.txt', '14\n'), done('answer.txt holds the code.')] },
};
