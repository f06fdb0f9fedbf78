import { expectRuns } from '../../lib.mjs';

/** main.lua on the checker's numbers, and the module used by the checker's own program. */
export default function check(c) {
  // Beside mathx.lua: require looks in the requiring program's folder.
  c.write(
    '/check-mathx.lua',
    'local m = require("mathx")\nprint(m.clamp(7, 1, 5), m.clamp(-2, 0, 3), m.clamp(2, 0, 3))\n',
  );
  return expectRuns(c, [
    ['main.lua', ['15', '0', '10'], '10'],
    ['main.lua', ['-3', '0', '10'], '0'],
    ['main.lua', ['4', '0', '10'], '4'],
    ['check-mathx.lua', [], '5 0 2'],
  ]);
}
