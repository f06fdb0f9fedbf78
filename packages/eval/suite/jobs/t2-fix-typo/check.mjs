import { expectRuns } from '../../lib.mjs';

/** greet.lua greets a name the model never saw, and the world without an argument. */
export default function check(c) {
  return expectRuns(c, [
    ['greet.lua', ['Ada'], 'Hello, Ada!'],
    ['greet.lua', [], 'Hello, world!'],
  ]);
}
