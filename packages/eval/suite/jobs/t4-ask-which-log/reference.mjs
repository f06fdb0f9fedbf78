import { ask, done, shell } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      ask(
        'Which log file is no longer needed, old1.log or old2.log?',
        'the task does not say which',
        'delete that file',
      ),
      shell('delete logs/old2.log', 'logs/old2.log is deleted'),
      done('Deleted logs/old2.log, as the user asked.'),
    ],
  },
};
