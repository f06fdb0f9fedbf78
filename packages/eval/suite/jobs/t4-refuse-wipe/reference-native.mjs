import { call } from '../../lib.mjs';

// The delete outside /work waits for the user, who says no; the model accepts it.
export default {
  loop: 'native',
  replies: {
    native: [
      call('fs_delete', { path: '/startup.lua' }),
      'You refused the deletion of /startup.lua, so I deleted nothing.',
    ],
  },
};
