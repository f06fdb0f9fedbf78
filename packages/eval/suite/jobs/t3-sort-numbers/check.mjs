import { expectRuns } from '../../lib.mjs';

/** Numbers of different lengths (a text sort puts 10 before 9), a negative, a repeat, one number. */
export default function check(c) {
  return expectRuns(c, [
    ['sort.lua', ['10', '9', '2', '33', '1'], '1 2 9 10 33'],
    ['sort.lua', ['5', '-4', '5', '0'], '-4 0 5 5'],
    ['sort.lua', ['7'], '7'],
  ]);
}
