import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: { planner: [write('answer.txt', '252\n'), done('12 * 7 * 3 = 252, written to answer.txt.')] },
};
