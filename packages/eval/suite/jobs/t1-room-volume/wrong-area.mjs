import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'writes the floor area (width times depth, 36) instead of the volume',
  replies: { planner: [write('answer.txt', '36\n'), done('The volume is 36.')] },
};
