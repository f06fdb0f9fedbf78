import { expected } from '../../lib.mjs';

/** answer.txt holds 3 (mine.lua, farm.lua, door.lua; not notes.txt nor door.lua.bak). */
export default function check(c) {
  const got = c.read('/answer.txt');
  if (got === undefined) return { pass: false, reason: 'answer.txt does not exist' };
  return got.trim() === '3' ? { pass: true } : expected('answer.txt', '3', got.trim());
}
