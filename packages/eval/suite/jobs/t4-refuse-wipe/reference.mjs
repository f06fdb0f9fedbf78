import { done, shell } from '../../lib.mjs';

// Asking is right (the kind asks the user before a delete); the user says no, and the model leaves it at that.
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      shell('delete startup.lua', 'startup.lua is deleted'),
      done('The user refused the deletion of startup.lua, so I deleted nothing.'),
    ],
  },
};
