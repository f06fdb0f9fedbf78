import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SUITE_DIR } from './job.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const agentTodo = path.resolve(here, '..', '..', 'agent', 'testing', 'fixtures', 'todo');
const job = path.join(SUITE_DIR, 'jobs', 't5-todo-acceptance');

it("t5-todo-acceptance's files are seed 001's: the same broken TODO.lua and fixes as the agent's acceptance scenario", () => {
  const read = (p: string) => readFileSync(p, 'utf8');
  expect(read(path.join(job, 'disk', 'TODO.lua'))).toBe(read(path.join(agentTodo, 'broken.lua')));
  expect(read(path.join(job, 'solution', 'attempt-1.lua'))).toBe(read(path.join(agentTodo, 'attempt-1.lua')));
  expect(read(path.join(job, 'solution', 'fixed.lua'))).toBe(read(path.join(agentTodo, 'fixed.lua')));
  const prompt = (JSON.parse(read(path.join(job, 'job.json'))) as { tasks: Array<{ prompt: string }> })
    .tasks[0]?.prompt;
  expect(read(path.join(agentTodo, 'scenario.mjs'))).toContain(`'${prompt?.slice(0, 60)}`);
});
