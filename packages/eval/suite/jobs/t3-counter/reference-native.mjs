import { call } from '../../lib.mjs';

const PROGRAM = `local count = 0
local f = fs.open("count.txt", "r")
if f then
  count = tonumber(f.readAll()) or 0
  f.close()
end
count = count + 1
f = fs.open("count.txt", "w")
f.write(tostring(count))
f.close()
print(count)
`;
export default {
  loop: 'native',
  replies: {
    native: [
      call('fs_write', { path: 'counter.lua', content: PROGRAM }),
      call('run_program', { path: 'counter.lua' }),
      call('run_program', { path: 'counter.lua' }),
      'counter.lua printed 1, then 2; the count is kept in count.txt.',
    ],
  },
};
