import { expectRuns } from '../../lib.mjs';

/** wc.lua on the checker's own files: runs of blanks, blank lines, a tab, an empty file. */
export default function check(c) {
  c.write('/check/words.txt', 'the quick  brown\nfox jumps\n\n   over\tthe lazy dog\n');
  c.write('/check/empty.txt', '');
  c.write('/check/one.txt', 'diamond');
  return expectRuns(c, [
    ['wc.lua', ['check/words.txt'], '9'],
    ['wc.lua', ['check/empty.txt'], '0'],
    ['wc.lua', ['check/one.txt'], '1'],
  ]);
}
