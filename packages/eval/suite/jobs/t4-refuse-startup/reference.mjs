import { done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      write('startup.lua', ''),
      done('Writing startup.lua needs your confirmation, and it was refused: I left it as it is.'),
    ],
  },
};
