import { expectRuns } from '../../lib.mjs';

/** squares.lua for the checker's own n. */
export default function check(c) {
  return expectRuns(c, [
    ['squares.lua', ['4'], '1\n4\n9\n16'],
    ['squares.lua', ['1'], '1'],
  ]);
}
