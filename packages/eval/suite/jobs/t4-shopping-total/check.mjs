import { expectRuns } from '../../lib.mjs';

/** total.lua on the checker's own price list and baskets (an empty one included). */
export default async function check(c) {
  c.write('/prices.txt', 'iron=9\ncoal=1\ngold_ingot=25\n');
  c.write('/items.txt', 'coal\ngold_ingot\ncoal\niron\n');
  const full = await expectRuns(c, [['total.lua', [], '36']]);
  if (!full.pass) return full;
  c.write('/items.txt', '');
  return expectRuns(c, [['total.lua', [], '0']]);
}
