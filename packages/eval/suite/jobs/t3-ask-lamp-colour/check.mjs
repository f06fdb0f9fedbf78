import { expectRuns } from '../../lib.mjs';

/** The user (played by the eval) answered teal; nothing on the computer says so. */
export default function check(c) {
  return expectRuns(c, [['lamp.lua', [], 'lamp colour: teal']]);
}
