import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: { planner: [write('answer.txt', '13\n'), done('log.txt has 13 lines; answer.txt says 13.')] },
};
