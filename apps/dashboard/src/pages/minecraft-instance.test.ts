import type { HttpMinecraftAction, HttpMinecraftLog } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { ACTION_MAX, LOG_MAX, mergeActions, mergeLogs } from './minecraft-instance.js';

const line = (seq: number): HttpMinecraftLog => ({
  instance_id: 'Bot',
  seq,
  at: seq,
  message: `line ${seq}`,
});
const action = (id: string, at: number, ended: number | null): HttpMinecraftAction => ({
  instance_id: 'Bot',
  action_id: id,
  type: 'goto',
  task_id: null,
  started_at: at,
  ended_at: ended,
  duration_ms: ended === null ? null : ended - at,
  ok: ended === null ? null : true,
});

describe('the instance page lists', () => {
  it('merges log lines by number, once each, oldest first, keeping the newest LOG_MAX', () => {
    expect(mergeLogs([line(2), line(1)], [line(2), line(3)]).map((l) => l.seq)).toEqual([1, 2, 3]);
    const many = Array.from({ length: LOG_MAX + 50 }, (_, n) => line(n + 1));
    const kept = mergeLogs(many.slice(0, 100), many.slice(100));
    expect(kept).toHaveLength(LOG_MAX);
    expect(kept[0]?.seq).toBe(51);
    expect(kept.at(-1)?.seq).toBe(LOG_MAX + 50);
  });

  it('replaces an action by its end, never an end by a late start, and keeps the newest ACTION_MAX', () => {
    const ended = mergeActions([action('a', 1, null)], [action('a', 1, 5)]);
    expect(ended).toEqual([action('a', 1, 5)]);
    // A start replayed after the end (a snapshot that raced the stream) does not undo the outcome.
    expect(mergeActions(ended, [action('a', 1, null)])).toEqual([action('a', 1, 5)]);
    const many = Array.from({ length: ACTION_MAX + 10 }, (_, n) => action(`x${n}`, n, n + 1));
    const kept = mergeActions([], many);
    expect(kept).toHaveLength(ACTION_MAX);
    expect(kept[0]?.action_id).toBe('x10');
  });
});
