import { ManualClock, type Task } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { ReplyStream, type ReplyDelta } from './reply-stream.js';

const task = { id: 't-1' } as Task;

function stream() {
  const clock = new ManualClock(1_000);
  const s = new ReplyStream(clock, 100);
  const got: Array<ReplyDelta & { at: number }> = [];
  s.on((d) => got.push({ ...d, at: clock.now() }));
  return { clock, s, got };
}

describe('ReplyStream', () => {
  it('sends a fast stream at most once per interval and loses no text (guards: one update per token flooding a CC computer)', async () => {
    const { clock, s, got } = stream();
    const words = Array.from({ length: 100 }, (_, i) => `w${i} `);
    for (const w of words) {
      s.push(task, 3, w);
      await clock.advance(10);
    }
    s.end(task.id);
    // 1 s of streaming: the first piece at once, then at most one delta per 100 ms, and the rest at the end.
    expect(got.length).toBeGreaterThan(5);
    expect(got.length).toBeLessThanOrEqual(12);
    for (let i = 1; i < got.length - 1; i++) {
      expect((got[i]?.at ?? 0) - (got[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(100);
    }
    expect(got.map((d) => d.delta).join('')).toBe(words.join(''));
    expect(got.every((d) => d.step === 3 && d.task === task)).toBe(true);
  });

  it('sends the last piece as soon as the call ends, without waiting for the interval', async () => {
    const { clock, s, got } = stream();
    s.push(task, 1, 'Hello');
    s.push(task, 1, ', world');
    expect(got.map((d) => d.delta)).toEqual(['Hello']);
    s.end(task.id);
    expect(got.map((d) => d.delta)).toEqual(['Hello', ', world']);
    await clock.advance(500);
    expect(got).toHaveLength(2);
  });

  it('leaves reasoning blocks out, also when a tag is split across pieces (guards: <think> text on the player’s screen)', () => {
    const { s, got } = stream();
    for (const piece of ['<th', 'ink>plan the', ' answer</thi', 'nk>The answer', ' is 4 <', ' 5.'])
      s.push(task, 1, piece);
    s.end(task.id);
    expect(got.map((d) => d.delta).join('')).toBe('The answer is 4 < 5.');
  });

  it('a new step ends the previous reply first', () => {
    const { s, got } = stream();
    s.push(task, 1, 'one');
    s.push(task, 1, ' more');
    s.push(task, 2, 'two');
    expect(got.map((d) => [d.step, d.delta])).toEqual([
      [1, 'one'],
      [1, ' more'],
      [2, 'two'],
    ]);
  });
});
