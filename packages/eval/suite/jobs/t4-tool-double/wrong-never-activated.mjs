import { call } from '../../lib.mjs';

export default {
  loop: 'native',
  why: 'creates the tool but never tests or activates it, then computes the result itself',
  replies: {
    native: [
      call('tool_create', { name: 'double', code: 'return function(args) return args.n * 2 end' }),
      'The double tool is ready.',
      call('fs_write', { path: 'result.txt', content: '42' }),
      'result.txt says 42.',
    ],
  },
};
