import type { JsonValue } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import {
  estimateTokens,
  renderMemory,
  renderPlannerTurn,
  sharedPrefixFraction,
  type SectionOrder,
} from './memory.js';
import {
  loadPlannerMemory,
  memoryToJson,
  plannerMemoryValidations,
  type PlannerMemory,
} from './planner-memory.js';
import { HistoryBuilder, makeTask } from '../test/support/test-history.js';

const limits = { maxQuestions: 2 };

describe('renderMemory', () => {
  it('renders every section with the current file version, hash, last error and stack trace pinned', () => {
    const h = new HistoryBuilder()
      .call('fs_write', { path: 'TODO.lua', content: 'print(1)\n' }, { ok: true, result: { success: true } })
      .call('fs_write', { path: 'TODO.lua', content: 'print(2)\n' }, { ok: true, result: { success: true } })
      .call(
        'run_program',
        { path: 'TODO.lua', args: ['list'] },
        {
          ok: false,
          error: { message: 'TODO.lua:3: attempt to index nil', traceback: 'stack traceback:\n  TODO.lua:3' },
        },
      );
    const memory = { ...loadPlannerMemory(null), plan: '1. run\n2. fix' };
    const { text } = renderMemory({ task: makeTask(), history: h.entries, memory, step: 4, limits });
    for (const s of ['# TASK', '# PLAN (pinned)', '# USER ANSWERS', '# HISTORY', '# FILES', '# STATE']) {
      expect(text).toContain(s);
    }
    expect(text).toContain('1. run\n2. fix');
    expect(text).toMatch(/## TODO\.lua \(version 2, sha [0-9a-f]{12}, written at #4\)\n```\nprint\(2\)\n```/);
    expect(text).not.toContain('print(1)');
    expect(text).toContain('last error (#6): TODO.lua:3: attempt to index nil');
    expect(text).toContain('last stack trace:');
    // A call and its result are one line; the file content lives under FILES only.
    expect(text).toContain('#6 (step 3) FAILED run_program TODO.lua list: TODO.lua:3: attempt to index nil');
    expect(text).not.toContain('CALL run_program');
  });

  it('shows follow-up messages under USER ANSWERS and messages, events and resumes in HISTORY (guards: the planner never seeing a message)', () => {
    const h = new HistoryBuilder().call(
      'run_program',
      { path: 'a.lua' },
      { ok: true, result: { output: 'x' } },
    );
    h.add({ type: 'resume', reason: 'message', from: 'completed' });
    h.add({ type: 'message', text: 'Now also print the date.' });
    h.add({ type: 'event', name: 'redstone', data: { on: true } });
    const { text } = renderMemory({
      task: makeTask(),
      history: h.entries,
      memory: loadPlannerMemory(null),
      step: 3,
      limits,
    });
    const answers = text.slice(text.indexOf('# USER ANSWERS'));
    expect(answers).toContain('Message from the user (#4): Now also print the date.');
    expect(text).toContain('#3 (step 2) TASK RESUMED (new message after it was completed)');
    expect(text).toContain('#4 (step 2) USER SAID: Now also print the date.');
    expect(text).toContain('#5 (step 2) EVENT redstone: {"on":true}');
  });

  it('compacts old entries into facts in whole chunks and keeps the recent ones verbatim', () => {
    const h = new HistoryBuilder();
    for (let i = 0; i < 12; i++)
      h.call(
        'run_program',
        { path: 'a.lua', args: [String(i)] },
        { ok: true, result: { output: `out ${i}` } },
      );
    const layout = { keepVerbatim: 6, compactChunk: 4 };
    const r = renderMemory({
      task: makeTask(),
      history: h.entries,
      memory: loadPlannerMemory(null),
      step: 13,
      limits,
      layout,
    });
    expect(r.memory.compactedThroughSeq).toBe(16);
    expect(r.memory.facts[0]).toBe('#2 run_program a.lua 0 → ok: out 0');
    expect(r.text).toContain('Earlier (compacted):');
    expect(r.text).toContain('#24 (step 12) OK run_program a.lua 11');
    expect(r.text).not.toContain('#2 (step 1)');
  });

  it('stays under the token budget of num_ctx by compacting, clipping files and dropping oldest facts', () => {
    const h = new HistoryBuilder();
    const big = 'x'.repeat(3000);
    h.call('fs_write', { path: 'big.lua', content: `${big}\n` }, { ok: true, result: {} });
    for (let i = 0; i < 30; i++)
      h.call('run_program', { path: 'big.lua', args: [String(i)] }, { ok: true, result: { output: big } });
    const r = renderMemory({
      task: makeTask(),
      history: h.entries,
      memory: loadPlannerMemory(null),
      step: 40,
      limits,
      layout: { numCtx: 2048, reserveTokens: 512 },
    });
    expect(r.budgetTokens).toBe(1536);
    expect(r.tokens).toBeLessThanOrEqual(1536);
    expect(estimateTokens(r.text)).toBe(r.tokens);
    expect(r.text).toContain('#62 (step 31)');
  });

  it('keeps a high shared prefix between consecutive renders (prompt cache reuse), far above the design order', () => {
    const run = (order: SectionOrder) => {
      const h = new HistoryBuilder();
      h.call(
        'fs_write',
        { path: 'TODO.lua', content: 'local t = {}\n'.repeat(30) },
        { ok: true, result: {} },
      );
      let memory: PlannerMemory = { ...loadPlannerMemory(null), plan: '1. test every command\n2. fix' };
      let previous = '';
      const fractions: number[] = [];
      for (let step = 2; step < 40; step++) {
        if (step % 10 === 0) {
          h.call(
            'fs_write',
            { path: 'TODO.lua', content: `-- v${step}\n` + 'local t = {}\n'.repeat(30) },
            { ok: true, result: {} },
          );
        }
        h.call(
          'run_program',
          { path: 'TODO.lua', args: ['list', String(step)] },
          { ok: true, result: { output: `item ${step}\n`.repeat(3) } },
        );
        const r = renderMemory({
          task: makeTask(),
          history: h.entries,
          memory,
          step,
          limits,
          layout: { order },
        });
        memory = r.memory;
        if (previous) fractions.push(sharedPrefixFraction(previous, r.text));
        previous = r.text;
      }
      return fractions;
    };
    const stable = run('stable');
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // Only the steps that write the file or compact a chunk rewrite the middle; every other step appends.
    expect(mean(stable)).toBeGreaterThan(0.75);
    expect(stable.filter((f) => f > 0.7).length).toBeGreaterThanOrEqual(stable.length * 0.8);
    // The design order (STATE second) shares almost nothing: the volatile section sits near the top.
    expect(mean(run('design'))).toBeLessThan(0.2);
  });
});

describe('sharedPrefixFraction', () => {
  it('measures the share of the previous text repeated at the start of the next', () => {
    expect(sharedPrefixFraction('abcd', 'abXX')).toBe(0.5);
    expect(sharedPrefixFraction('abcd', 'abcdef')).toBe(1);
    expect(sharedPrefixFraction('', 'x')).toBe(1);
  });
});

describe('loadPlannerMemory', () => {
  it('starts fresh from absent or foreign memory instead of crashing', () => {
    expect(loadPlannerMemory(null).facts).toEqual([]);
    expect(loadPlannerMemory({ v: 99 } as never).compactedThroughSeq).toBe(0);
  });

  it('does not re-validate the memory it handed the engine, and returns a copy the step may change (guards against re-parsing every step and against aliasing the committed memory)', () => {
    const working = { ...loadPlannerMemory(null), plan: '1. fix', facts: ['a'] };
    const committed = memoryToJson(working);
    const before = plannerMemoryValidations();
    const next = loadPlannerMemory(committed);
    expect(plannerMemoryValidations()).toBe(before);
    expect(next).toEqual(working);
    next.facts.push('b');
    next.counters.bounces = 3;
    expect(committed).toMatchObject({ facts: ['a'], counters: { bounces: 0 } });
    expect(loadPlannerMemory(committed).facts).toEqual(['a']);
    expect(plannerMemoryValidations()).toBe(before);
  });

  it('validates a new object, also a changed copy of a known memory (guards against a stale validation of different content)', () => {
    const committed = memoryToJson({ ...loadPlannerMemory(null), plan: 'p' }) as Record<string, unknown>;
    const before = plannerMemoryValidations();
    expect(loadPlannerMemory({ ...committed, plan: 'q' }).plan).toBe('q');
    expect(plannerMemoryValidations()).toBe(before + 1);
    // Same content, but an object never seen (e.g. read back after a restart): validated once, then cached.
    const reread = JSON.parse(JSON.stringify(committed)) as JsonValue;
    loadPlannerMemory(reread);
    loadPlannerMemory(reread);
    expect(plannerMemoryValidations()).toBe(before + 2);
    // A copy that no longer fits the schema is refused: fresh memory.
    expect(loadPlannerMemory({ ...committed, facts: 'x' }).plan).toBeNull();
    expect(plannerMemoryValidations()).toBe(before + 3);
  });
});

describe('renderPlannerTurn (the planner conversation)', () => {
  const step = (h: HistoryBuilder, i: number): void => {
    h.call(
      'run_program',
      { path: 'a.lua', args: [String(i)] },
      { ok: true, result: { output: `line ${i}\n`.repeat(20) } },
    );
  };

  it('appends one message per request, restarts only when the turns outgrow the budget, and counts each restart (guards against a prompt rebuilt every step and against compaction going unnoticed)', () => {
    const h = new HistoryBuilder();
    let memory = loadPlannerMemory(null);
    const layout = { numCtx: 4096, reserveTokens: 1024 };
    const seen: { turns: number; compacted: boolean; user: string }[] = [];
    for (let i = 0; i < 40; i++) {
      step(h, i);
      const r = renderPlannerTurn({
        task: makeTask(),
        history: h.entries,
        memory,
        step: i + 2,
        limits,
        layout,
      });
      expect(r.tokens).toBeLessThanOrEqual(r.budgetTokens);
      seen.push({ turns: r.turns.length, compacted: r.compacted, user: r.user });
      memory = {
        ...r.memory,
        conversation: {
          ...r.memory.conversation,
          turns: [...r.turns, { user: r.user, reply: `RUN\nPATH: a.lua\nARGS: ${i + 1}` }],
        },
      };
    }
    const restarts = seen.filter((s) => s.compacted).length;
    expect(restarts).toBeGreaterThan(0);
    expect(restarts).toBeLessThan(8);
    expect(memory.conversation.compactions).toBe(restarts);
    // Between restarts every request adds exactly one turn; an update carries only the new entry and the STATE.
    for (let i = 1; i < seen.length; i++) {
      const s = seen[i] as (typeof seen)[number];
      if (!s.compacted) expect(s.turns).toBe((seen[i - 1] as (typeof seen)[number]).turns + 1);
      if (!s.compacted)
        expect(s.user).toMatch(
          /^# HISTORY \(new since your last directive\)\n#\d+ \(step \d+\) OK run_program a\.lua \d+\n/,
        );
      if (!s.compacted) expect(s.user).not.toContain('# TASK');
    }
    // A restart starts from the rendered memory again.
    expect(seen.find((s) => s.compacted)?.user).toMatch(/^# TASK\n/);
  });

  it('recalls an older error in the STATE until the same call runs without it (guards against a fixed error repeated in every message, misleading the planner)', () => {
    const failing = {
      ok: false as const,
      error: { message: 'a.lua:3: attempt to index nil', traceback: 'stack traceback:\n  a.lua:3' },
    };
    const h = new HistoryBuilder().call('run_program', { path: 'a.lua', args: ['list'] }, failing);
    let memory = loadPlannerMemory(null);
    const turn = (stepNo: number): string => {
      const r = renderPlannerTurn({ task: makeTask(), history: h.entries, memory, step: stepNo, limits });
      memory = {
        ...r.memory,
        conversation: {
          ...r.memory.conversation,
          turns: [...r.turns, { user: r.user, reply: 'RUN\nPATH: a.lua' }],
        },
      };
      return r.user;
    };
    turn(2);
    // Another call succeeds: the error is not fixed, so it is recalled.
    h.call(
      'run_program',
      { path: 'a.lua', args: ['add', 'x'] },
      { ok: true, result: { output: 'Added: x\n' } },
    );
    expect(turn(3)).toMatch(/# STATE\n.*\nlast error \(#2\): a\.lua:3: attempt to index nil\n/);
    // The failing call itself now runs: the error is resolved and no longer recalled.
    h.call('run_program', { path: 'a.lua', args: ['list'] }, { ok: true, result: { output: '1. x\n' } });
    const after = turn(4);
    expect(after).toContain('OK run_program a.lua list');
    expect(after).not.toContain('last error');
  });

  it('renders the whole memory into one message each request with conversation: false (guards against the old layout breaking)', () => {
    const h = new HistoryBuilder();
    step(h, 1);
    const r = renderPlannerTurn({
      task: makeTask(),
      history: h.entries,
      memory: loadPlannerMemory(null),
      step: 2,
      limits,
      layout: { conversation: false },
    });
    expect(r.turns).toEqual([]);
    expect(r.user).toBe(
      renderMemory({ task: makeTask(), history: h.entries, memory: loadPlannerMemory(null), step: 2, limits })
        .text,
    );
  });
});
