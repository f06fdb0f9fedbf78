// Helpers for the suite's scripted runs (reference.mjs, wrong-*.mjs): the planner directives and native tool calls a
// model would write, so each run reads as the steps it takes. See docs/eval.md, "Adding a job".
import { readFileSync } from 'node:fs';

const words = (args) => args.map((a) => (/[\s"]/.test(a) ? JSON.stringify(a) : a)).join(' ');

/** Planner: write a file, then run these programs (each `[path, ...args]`) while they succeed. */
export function write(path, content, runs = []) {
  const lang = path.endsWith('.lua') ? 'lua' : 'text';
  return [
    'WRITE_FILE',
    `PATH: ${path}`,
    `LANGUAGE: ${lang}`,
    'CONTENT:',
    '```' + lang,
    content.replace(/\n$/, ''),
    '```',
    ...(runs.length ? ['THEN:', ...runs.map((r) => `- ${words(r)}`)] : []),
  ].join('\n');
}

/** Planner: run a program. */
export function run(path, args = [], expect = 'it works') {
  return ['RUN', `PATH: ${path}`, `ARGS: ${words(args)}`, `EXPECT: ${expect}`].join('\n');
}

/** Planner: a shell command line. */
export function shell(command, expect = 'the listing') {
  return ['SHELL', `COMMAND: ${command}`, `EXPECT: ${expect}`].join('\n');
}

/** Planner: ask the user. */
export function ask(question, why, next) {
  return ['ASK_USER', `QUESTION: ${question}`, `WHY: ${why}`, `NEXT: ${next}`].join('\n');
}

/** Planner: the task is done. */
export function done(summary) {
  return ['DONE', `SUMMARY: ${summary}`, 'NOTES: none'].join('\n');
}

/** Native: one tool call. */
export function call(name, args) {
  return { toolCalls: [{ name, arguments: args }] };
}

/** A file of the job folder (a solution kept beside the job), read as text. */
export function file(url) {
  return readFileSync(url, 'utf8');
}

/** Compare program output ignoring surrounding blanks and blank-run differences inside lines. */
export function same(a, b) {
  const norm = (s) =>
    String(s ?? '')
      .split('\n')
      .map((l) => l.trim().replace(/\s+/g, ' '))
      .join('\n')
      .trim();
  return norm(a) === norm(b);
}

/** A failed verdict naming what was expected and what was found. */
export function expected(what, want, got) {
  return { pass: false, reason: `${what}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}` };
}

/**
 * Check a list of program runs against expected outputs: `cases` is `[[program, args, wantOutput], ...]`; every run
 * must succeed and print the expected text (compared with `same`).
 */
export async function expectRuns(c, cases) {
  const outs = await c.runs(cases.map(([program, args]) => ({ program, args })));
  for (const [i, [program, args, want]] of cases.entries()) {
    const o = outs[i];
    const label = [program, ...args].join(' ');
    if (!o.ok) return { pass: false, reason: `${label} failed: ${o.error ?? 'error'}` };
    if (!same(o.output, want)) return expected(label, want, o.output);
  }
  return { pass: true };
}
