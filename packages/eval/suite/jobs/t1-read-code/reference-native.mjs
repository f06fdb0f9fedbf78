import { call } from '../../lib.mjs';

// Native tool calling: the model reads the file itself, then writes the answer.
export default {
  loop: 'native',
  replies: {
    native: [
      call('fs_read', { path: 'data.txt' }),
      call('fs_write', { path: 'answer.txt', content: 'copper-42' }),
      'answer.txt holds copper-42, the code from data.txt.',
    ],
  },
};
