import { expectRuns } from '../../lib.mjs';

/** avg.lua for the checker's own numbers. */
export default function check(c) {
  return expectRuns(c, [
    ['avg.lua', ['1', '2', '3', '4'], '2.5'],
    ['avg.lua', ['10'], '10'],
    ['avg.lua', ['2', '4', '6'], '4'],
  ]);
}
