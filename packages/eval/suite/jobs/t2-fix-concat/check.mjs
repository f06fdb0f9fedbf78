import { expectRuns } from '../../lib.mjs';

/** total.lua sums the checker's own numbers, none included. */
export default function check(c) {
  return expectRuns(c, [
    ['total.lua', ['10', '20', '12'], 'Total: 42'],
    ['total.lua', ['7'], 'Total: 7'],
    ['total.lua', [], 'Total: 0'],
  ]);
}
