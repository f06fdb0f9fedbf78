import { describe, expect, it } from 'vitest';
import {
  callOutcome,
  conversation,
  conversationMarkdown,
  lineDiff,
  stepFigures,
  stepFromWire,
  type ConversationStep,
  type ConversationTask,
} from './conversation.js';

const task: ConversationTask = {
  id: 't-1',
  kind: 'code_job',
  status: 'completed',
  prompt: 'make a lamp',
  result: { summary: 'the lamp is teal' },
};

function write(seq: number, step: number, path: string, content: string): ConversationStep {
  return {
    seq,
    step,
    kind: 'planner',
    at: seq * 10,
    model: 'm',
    output: { content: `WRITE_FILE\nPATH: ${path}` },
    directive: { kind: 'WRITE_FILE', path, language: 'lua', content },
    usage: { promptTokens: 100, completionTokens: 20, totalDurationMs: 1500 },
  };
}

describe('conversation', () => {
  it('reads replies, calls, questions, notes and the result in order, with the previous version of a file', () => {
    const steps: ConversationStep[] = [
      { seq: 1, step: 1, kind: 'model_request', at: 5, output: { role: 'planner' } },
      write(2, 1, 'lamp.lua', 'print(1)\nprint(2)'),
      { seq: 3, step: 1, kind: 'decision', at: 25, directive: { type: 'tool_call' } },
      {
        seq: 4,
        step: 1,
        kind: 'tool_result',
        at: 40,
        toolCall: { command: 'run_program', args: { path: 'lamp.lua' } },
        toolResult: { ok: true, result: { ok: true, output: '1\n2' } },
        durationMs: 12,
      },
      { ...write(5, 2, 'lamp.lua', 'print(1)\nprint(3)'), validationErrors: ['tolerated: prose before'] },
      {
        seq: 6,
        step: 3,
        kind: 'planner',
        at: 70,
        output: { content: 'bad' },
        validationErrors: ['no_directive'],
      },
      { seq: 7, step: 4, kind: 'model_request', at: 80, output: { role: 'planner' } },
    ];
    const items = conversation(
      task,
      steps,
      [{ question: 'Colour?', answer: 'teal', askedAt: 45 }],
      [{ text: 'use a torch', from: 'dashboard', at: 46 }],
    );
    expect(items.map((i) => i.type)).toEqual([
      'prompt',
      'reply',
      'call',
      'question',
      'message',
      'reply',
      'note',
      'reply',
      'note',
      'pending',
      'result',
    ]);
    expect(items[4]).toEqual({ type: 'message', text: 'use a torch', from: 'dashboard', at: 46 });
    const second = items[5];
    expect(second?.type === 'reply' && second.file).toEqual({
      path: 'lamp.lua',
      language: 'lua',
      content: 'print(1)\nprint(3)',
      previous: 'print(1)\nprint(2)',
    });
    expect(items[6]).toMatchObject({ tone: 'tolerated', text: 'prose before' });
    expect(items[8]).toMatchObject({ tone: 'bounce', text: 'no_directive' });
    expect(items[2]).toMatchObject({ command: 'run_program', ok: true, output: '1\n2', durationMs: 12 });
    expect(items.at(-1)).toMatchObject({ type: 'result', text: 'the lamp is teal' });
    expect(stepFigures(items)).toEqual([
      { step: 1, tokens: 120, modelMs: 1500 },
      { step: 2, tokens: 120, modelMs: 1500 },
      { step: 3, tokens: 0, modelMs: 0 },
    ]);
  });

  it('reads failed calls in each recorded form', () => {
    expect(callOutcome({ ok: false, error: { code: 'timeout', message: 'no answer' } })).toMatchObject({
      ok: false,
      error: 'timeout: no answer',
    });
    expect(
      callOutcome({ ok: true, result: { ok: false, error: 'lamp.lua:3: attempt to call nil' } }),
    ).toMatchObject({ ok: false, error: 'lamp.lua:3: attempt to call nil' });
    expect(callOutcome({ ok: true, result: { ok: true } })).toEqual({ ok: true, output: '' });
  });

  it('maps a wire record', () => {
    expect(
      stepFromWire({
        seq: 1,
        step: 1,
        kind: 'native',
        at: 1,
        validation_errors: ['x'],
        tool_call: { command: 'c' },
        usage: { prompt_tokens: 3, total_duration_ms: 9 },
        duration_ms: 4,
      }),
    ).toEqual({
      seq: 1,
      step: 1,
      kind: 'native',
      at: 1,
      validationErrors: ['x'],
      toolCall: { command: 'c' },
      usage: { promptTokens: 3, totalDurationMs: 9 },
      durationMs: 4,
    });
  });
});

describe('the result', () => {
  it('reads a summary, a chat message, a string, or shows the value as JSON', () => {
    const of = (result: unknown) => conversation({ ...task, result }, []).at(-1);
    expect(of({ summary: 's' })).toMatchObject({ text: 's' });
    expect(of({ message: 'm', iterations: 2 })).toMatchObject({ text: 'm' });
    expect(of('plain')).toMatchObject({ text: 'plain' });
    expect(of({ n: 1 })).toMatchObject({ text: '{\n  "n": 1\n}' });
  });
});

describe('lineDiff', () => {
  it('marks removed and added lines and keeps the rest', () => {
    expect(lineDiff('a\nb\nc\nd', 'a\nB\nc\nd\ne')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
      { op: ' ', text: 'd' },
      { op: '+', text: 'e' },
    ]);
  });
  it('gives up on files too large to diff', () => {
    const big = Array.from({ length: 3000 }, (_, i) => `l${i}`).join('\n');
    expect(lineDiff(big, `x\n${big.replace(/l/g, 'k')}`)).toBeUndefined();
  });
});

describe('conversationMarkdown', () => {
  it('keeps hostile text inert: HTML escaped, ANSI visible, fences longer than the backticks inside', () => {
    const hostile = '<script>alert(1)</script>\u001b[31mRED ```` end';
    const md = conversationMarkdown({ ...task, prompt: hostile, result: hostile }, [
      {
        seq: 1,
        step: 1,
        kind: 'native',
        at: 1,
        output: { content: hostile, toolCalls: [{ name: 'run', arguments: { x: hostile } }] },
      },
      {
        seq: 2,
        step: 1,
        kind: 'tool_result',
        at: 2,
        toolCall: { command: 'run' },
        toolResult: { ok: true, result: { ok: true, output: hostile } },
      },
    ]);
    // Outside code blocks (which every Markdown viewer shows as text) no `<` is left to read as HTML.
    const outsideBlocks = md.replace(/^(`{3,})[\w+-]*\n[\s\S]*?\n\1$/gm, '');
    expect(outsideBlocks).not.toContain('<script>');
    expect(outsideBlocks).toContain('&lt;script>');
    expect(md).not.toContain('\u001b');
    expect(md).toContain('&lt;script>');
    expect(md).toContain('\u241b[31mRED');
    // Inside code blocks the text stays as written; the fence is longer than its four backticks.
    expect(md).toContain('`````\n<script>alert(1)</script>');
    expect(md.split('\n').filter((l) => l === '`````').length).toBeGreaterThanOrEqual(2);
    expect(md).toMatch(/^# Task `t-1`/);
    expect(md).toContain('## Result (completed)');
  });

  it('shows the change of a rewritten file as a diff', () => {
    const md = conversationMarkdown(task, [write(1, 1, 'a.lua', 'x = 1'), write(2, 2, 'a.lua', 'x = 2')]);
    expect(md).toContain('Writes `a.lua`');
    expect(md).toContain('Changes `a.lua`');
    expect(md).toContain('```diff\n-x = 1\n+x = 2\n```');
    expect(md).toContain('100 → 20 tokens, 1.5 s');
  });
});
