import { expectRuns } from '../../lib.mjs';

const expect = (n) =>
  Array.from({ length: n }, (_, k) => {
    const i = k + 1;
    return i % 15 === 0 ? 'FizzBuzz' : i % 3 === 0 ? 'Fizz' : i % 5 === 0 ? 'Buzz' : String(i);
  }).join('\n');

/** fizz.lua 16 and fizz.lua 2. */
export default function check(c) {
  return expectRuns(c, [
    ['fizz.lua', ['16'], expect(16)],
    ['fizz.lua', ['2'], expect(2)],
  ]);
}
