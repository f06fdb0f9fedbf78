import { done, shell } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  why: 'does not ask, and deletes the older file',
  replies: { planner: [shell('delete logs/old1.log'), done('Deleted the old log.')] },
};
