import { expected } from '../../lib.mjs';

/** answer.txt holds the code from data.txt (blanks around it allowed). */
export default function check(c) {
  const got = c.read('/answer.txt');
  if (got === undefined) return { pass: false, reason: 'answer.txt does not exist' };
  return got.trim() === 'copper-42' ? { pass: true } : expected('answer.txt', 'copper-42', got.trim());
}
