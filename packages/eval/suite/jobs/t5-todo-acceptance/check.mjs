import { expectRuns } from '../../lib.mjs';

/** From a clean list, every command as a player would use it (the end-to-end acceptance test's own sequence). */
export default function check(c) {
  c.remove('/todo.db');
  return expectRuns(c, [
    ['TODO.lua', ['list'], 'Nothing to do.'],
    ['TODO.lua', ['add', 'Mine', 'iron'], 'Added: Mine iron'],
    ['TODO.lua', ['add', 'Smelt'], 'Added: Smelt'],
    ['TODO.lua', ['done', '2'], 'Done: Smelt'],
    ['TODO.lua', ['stats'], '2 items, 1 done, 1 open'],
    ['TODO.lua', ['remove', '1'], 'Removed: Mine iron'],
    ['TODO.lua', ['list'], '1. [x] Smelt'],
    ['TODO.lua', ['done', '9'], 'No item 9'],
  ]);
}
