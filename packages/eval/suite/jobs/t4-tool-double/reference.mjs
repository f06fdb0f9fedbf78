import { call } from '../../lib.mjs';

export default {
  loop: 'native',
  replies: {
    native: [
      // task 1: draft -> test (a passing tool_test) -> active
      call('tool_create', {
        name: 'double',
        code: 'return function(args) return args.n * 2 end',
        description: 'Returns n times 2.',
        args_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      }),
      call('tool_test', { name: 'double', args: { n: 4 } }),
      call('tool_set_status', { name: 'double', status: 'active' }),
      'The double tool is active: its test with n = 4 returned 8.',
      // task 2: the active tool is a command of the computer now
      call('double', { n: 21 }),
      call('fs_write', { path: 'result.txt', content: '42' }),
      'double(21) is 42; result.txt says 42.',
    ],
  },
};
