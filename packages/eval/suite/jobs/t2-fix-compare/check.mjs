import { expectRuns } from '../../lib.mjs';

/** big.lua on both sides of 10, and 10 itself (not more than 10), 100 (more digits, not only more than 10). */
export default function check(c) {
  return expectRuns(c, [
    ['big.lua', ['12'], '12 is big'],
    ['big.lua', ['3'], '3 is small'],
    ['big.lua', ['10'], '10 is small'],
    ['big.lua', ['100'], '100 is big'],
  ]);
}
