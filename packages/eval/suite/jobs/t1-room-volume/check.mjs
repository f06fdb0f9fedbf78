import { expected } from '../../lib.mjs';

/** answer.txt holds 252 (12 × 7 × 3). */
export default function check(c) {
  const got = c.read('/answer.txt');
  if (got === undefined) return { pass: false, reason: 'answer.txt does not exist' };
  return got.trim() === '252' ? { pass: true } : expected('answer.txt', '252', got.trim());
}
