import { done, file, run, write } from '../../lib.mjs';

// The replies of the acceptance scenario (@ccagent/agent/testing's todo): a first fix that is incomplete, then the
// whole fix; solution/ holds the two versions.
const ATTEMPT_1 = file(new URL('./solution/attempt-1.lua', import.meta.url));
const FIXED = file(new URL('./solution/fixed.lua', import.meta.url));
export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      run('TODO.lua', ['list'], 'an empty list'),
      write('TODO.lua', ATTEMPT_1, [
        ['TODO.lua', 'add', 'Buy', 'milk'],
        ['TODO.lua', 'add', 'Water the plants'],
        ['TODO.lua', 'list'],
        ['TODO.lua', 'done', '1'],
        ['TODO.lua', 'stats'],
      ]),
      write('TODO.lua', FIXED, [
        ['TODO.lua', 'done', '1'],
        ['TODO.lua', 'stats'],
        ['TODO.lua', 'add', 'Feed', 'the', 'cat'],
        ['TODO.lua', 'remove', '3'],
        ['TODO.lua', 'list'],
      ]),
      done(
        'TODO.lua is fixed: load() copes with a missing todo.db, done and remove use tonumber, stats counts done items.',
      ),
    ],
  },
};
