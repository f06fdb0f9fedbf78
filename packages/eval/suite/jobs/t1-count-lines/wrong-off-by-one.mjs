import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'counts the line breaks between lines (12), not the lines',
  replies: { planner: [write('answer.txt', '12\n'), done('log.txt has 12 lines.')] },
};
