import { ask, done, write } from '../../lib.mjs';

export default {
  loop: 'planner-executor',
  replies: {
    planner: [
      ask(
        'Which colour should the lamp be?',
        'the task does not say',
        'write lamp.lua with that colour and run it',
      ),
      write('lamp.lua', 'print("lamp colour: teal")\n', [['lamp.lua']]),
      done('The user chose teal; lamp.lua prints lamp colour: teal.'),
    ],
  },
};
