import { call } from '../../lib.mjs';

const FIXED = `local total = 0
for _, a in ipairs(arg) do
  total = total + tonumber(a)
end
print("Total: " .. total)
`;
export default {
  loop: 'native',
  replies: {
    native: [
      call('run_program', { path: 'total.lua', args: ['4', '5', '6'] }),
      call('fs_write', { path: 'total.lua', content: FIXED }),
      call('run_program', { path: 'total.lua', args: ['4', '5', '6'] }),
      'Lua joins strings with .., not +: total.lua 4 5 6 prints Total: 15 now.',
    ],
  },
};
