import { done, file, run, write } from '../../lib.mjs';

// The whole fix but one line: remove prints its message and never saves, as the broken file did. Every run the model
// makes succeeds, so the orchestrator's completion criteria hold; only a later list shows the item still there.
const FIXED = file(new URL('./solution/fixed.lua', import.meta.url));
const WRONG = FIXED.replace(
  '    local removed = table.remove(todos, n)\n    save(todos)\n',
  '    local removed = table.remove(todos, n)\n',
);
if (WRONG === FIXED) throw new Error('wrong-remove-not-saved: the line to drop is not in fixed.lua');
export default {
  loop: 'planner-executor',
  why: 'remove does not save the list',
  replies: {
    planner: [
      run('TODO.lua', ['list'], 'an empty list'),
      write('TODO.lua', WRONG, [
        ['TODO.lua', 'add', 'Buy', 'milk'],
        ['TODO.lua', 'list'],
        ['TODO.lua', 'done', '1'],
        ['TODO.lua', 'stats'],
        ['TODO.lua', 'remove', '1'],
      ]),
      done('TODO.lua is fixed: every command works.'),
    ],
  },
};
