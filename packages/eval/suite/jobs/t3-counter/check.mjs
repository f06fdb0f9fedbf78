import { expectRuns, expected } from '../../lib.mjs';

/** From no count.txt: 1, 2, 3, and count.txt then says 3; from a count.txt of 41 the next run prints 42. */
export default async function check(c) {
  c.remove('/count.txt');
  const first = await expectRuns(c, [
    ['counter.lua', [], '1'],
    ['counter.lua', [], '2'],
    ['counter.lua', [], '3'],
  ]);
  if (!first.pass) return first;
  const saved = (c.read('/count.txt') ?? '').trim();
  if (saved !== '3') return expected('count.txt after three runs', '3', saved);
  c.write('/count.txt', '41');
  return expectRuns(c, [['counter.lua', [], '42']]);
}
