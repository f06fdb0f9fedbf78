import { describe, expect, it } from 'vitest';
import { HTTP_EVENT_SCHEMAS, HTTP_EVENT_TYPES, HTTP_EVENTS, parseHttpEvent } from '../index.js';

const task = {
  id: 't1',
  kind: 'general',
  status: 'running',
  client_id: null,
  prompt: 'do it',
  prompt_truncated: false,
  counters: { steps: 1, tool_calls: 0, questions: 0 },
  created_at: 1,
  updated_at: 2,
};

describe('GET /api/events records', () => {
  it('has one schema and one documented entry per event kind (a kind without one could not be parsed or read about)', () => {
    expect(Object.keys(HTTP_EVENT_SCHEMAS).sort()).toEqual([...HTTP_EVENT_TYPES].sort());
    expect(HTTP_EVENTS.map((e) => e.name)).toEqual([...HTTP_EVENT_TYPES]);
    for (const e of HTTP_EVENTS) expect(e.description.length).toBeGreaterThan(10);
  });

  it('parses each kind into its typed record, accepting (and dropping) fields a newer server adds', () => {
    const r = parseHttpEvent('task', JSON.stringify({ ...task, extra: 1 }));
    expect(r).toEqual({ ok: true, value: { type: 'task', data: task } });
    expect(parseHttpEvent('delta', '{"task_id":"t1","step":3,"delta":"he"}')).toEqual({
      ok: true,
      value: { type: 'delta', data: { task_id: 't1', step: 3, delta: 'he' } },
    });
    expect(parseHttpEvent('resync', '{"reason":"slow_consumer"}').ok).toBe(true);
    expect(parseHttpEvent('hello', '{"epoch":"abc"}').ok).toBe(true);
  });

  it('parses a step record with its short form, a schedule change and a counted mc_log line; refuses a bad change', () => {
    const step = {
      task_id: 't1',
      seq: 4,
      step: 2,
      kind: 'decision',
      at: 5,
      summary: true,
      directive: { type: 'tool_call', command: 'turtle.forward' },
      preview: 'moving',
      output_chars: 40,
    };
    expect(parseHttpEvent('step', JSON.stringify(step))).toEqual({
      ok: true,
      value: { type: 'step', data: step },
    });
    expect(parseHttpEvent('step', JSON.stringify({ ...step, summary: false }))).toMatchObject({
      ok: false,
      error: { path: '$.summary' },
    });
    const fired = { schedule_id: 's', change: 'fired', at: 9, due_at: 8, status: 'done', task_id: 't' };
    expect(parseHttpEvent('schedule', JSON.stringify(fired))).toEqual({
      ok: true,
      value: { type: 'schedule', data: fired },
    });
    expect(parseHttpEvent('schedule', '{"schedule_id":"s","change":"exploded","at":1}')).toMatchObject({
      ok: false,
      error: { code: 'invalid_field', path: '$.change' },
    });
    const marker = { instance_id: 'i', seq: 90, at: 1, message: '… 80 lines', dropped: 80 };
    expect(parseHttpEvent('mc_log', JSON.stringify(marker))).toEqual({
      ok: true,
      value: { type: 'mc_log', data: marker },
    });
    expect(parseHttpEvent('resync', '{"reason":"minecraft_gap"}').ok).toBe(true);
  });

  it('refuses an unknown kind, bad JSON and a malformed record with a code and the path of the field', () => {
    expect(parseHttpEvent('comet', '{}')).toMatchObject({ ok: false, error: { code: 'unknown_type' } });
    expect(parseHttpEvent('step', '{"task_id":')).toMatchObject({
      ok: false,
      error: { code: 'invalid_json' },
    });
    expect(parseHttpEvent('step', '[1]')).toMatchObject({ ok: false, error: { code: 'invalid_message' } });
    expect(parseHttpEvent('delta', '{"task_id":"t","step":1}')).toMatchObject({
      ok: false,
      error: { code: 'missing_field', path: '$.delta' },
    });
    expect(parseHttpEvent('task', JSON.stringify({ ...task, status: 'sleeping' }))).toMatchObject({
      ok: false,
      error: { code: 'invalid_field', path: '$.status' },
    });
    expect(parseHttpEvent('resync', '{"reason":"bored"}')).toMatchObject({
      ok: false,
      error: { code: 'invalid_field', path: '$.reason' },
    });
    expect(parseHttpEvent('step', '['.repeat(50) + ']'.repeat(50))).toMatchObject({
      ok: false,
      error: { code: 'nesting_too_deep' },
    });
  });
});
