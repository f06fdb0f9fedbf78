import { expected } from '../../lib.mjs';

/** answer.txt holds 13, the number of lines of log.txt. */
export default function check(c) {
  const got = c.read('/answer.txt');
  if (got === undefined) return { pass: false, reason: 'answer.txt does not exist' };
  return got.trim() === '13' ? { pass: true } : expected('answer.txt', '13', got.trim());
}
