import { parseClientMessage } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { createHostileGenerator, type HostileMessage, type HostileTargets } from './hostile-messages.js';
import { createRng } from './rng.js';

const TARGETS: HostileTargets = {
  clientId: 'fuzzer',
  victimClientId: 'victim',
  victimTaskIds: ['task-a', 'task-b'],
  victimCallIds: ['task-a:call:1'],
  maxMessageBytes: 131_072,
  hardFrameCap: 1_048_576,
};

function sample(seed: number, n: number): HostileMessage[] {
  const next = createHostileGenerator(createRng(seed), TARGETS);
  return Array.from({ length: n }, () => next());
}

const text = (f: string | Buffer): string => (typeof f === 'string' ? f : f.toString('utf8'));

describe('hostile message generator', () => {
  it('replays the same stream from the same seed (a failing fuzz run can be reproduced)', () => {
    const a = sample(42, 300).map((m) => m.frames.map(text).join('|'));
    const b = sample(42, 300).map((m) => m.frames.map(text).join('|'));
    expect(a).toEqual(b);
    expect(sample(43, 300).map((m) => m.frames.map(text).join('|'))).not.toEqual(a);
  });

  it('covers every category and gives every message an expectation', () => {
    const msgs = sample(7, 20_000);
    const seen = new Set(msgs.map((m) => m.category));
    for (const c of [
      'invalid_json',
      'not_an_object',
      'mutated_field',
      'missing_field',
      'unknown_type',
      'server_only_type',
      'deep_nesting',
      'huge_string',
      'oversized_frame',
      'binary_frame',
      'unicode_garbage',
      'prototype_keys',
      'chunk_abuse',
      'forged_result',
      'forged_task_access',
      'forged_create',
      'second_hello',
      'ping',
      'close_before_hello',
      'frame_over_hard_cap',
      'invalid_utf8',
    ]) {
      expect(seen.has(c as HostileMessage['category']), c).toBe(true);
    }
    for (const m of msgs) {
      expect(m.frames.length).toBeGreaterThan(0);
      if (m.expect.kind === 'error') expect(m.expect.codes?.length).toBeGreaterThan(0);
    }
  });

  it('never emits a valid message that would do real work for the attacker (mutants are all rejected)', () => {
    for (const m of sample(11, 5000)) {
      if (m.category !== 'mutated_field' && m.category !== 'missing_field') continue;
      const r = parseClientMessage(text(m.frames[0] as string));
      expect(r.ok, text(m.frames[0] as string)).toBe(false);
      expect(m.expect).toEqual({ kind: 'error', codes: [r.ok ? 'none' : r.error.code] });
    }
    // Creations are only ever for the victim (refused) or of a kind that does not exist.
    for (const m of sample(12, 5000)) {
      if (m.category !== 'forged_create') continue;
      const body = JSON.parse(text(m.frames[0] as string)) as { client_id: string; task_kind: string };
      expect(body.client_id === 'victim' || body.task_kind.startsWith('no_such_kind_')).toBe(true);
    }
  });

  it('builds chunk sequences that reassemble to the inner text, and inconsistent ones', () => {
    const chunked = sample(5, 20_000).filter((m) => m.category === 'chunk_abuse' && m.frames.length > 1);
    expect(chunked.length).toBeGreaterThan(10);
    const wellFormed = chunked.filter((m) => {
      const parts = m.frames.map(
        (f) => JSON.parse(text(f)) as { index: number; count: number; data: string },
      );
      return parts.every((p, i) => p.index === i && p.count === parts.length);
    });
    expect(wellFormed.length).toBeGreaterThan(0);
    for (const m of wellFormed) {
      const parts = m.frames.map((f) => JSON.parse(text(f)) as { chunk_id: string; data: string });
      expect(new Set(parts.map((p) => p.chunk_id)).size).toBe(1);
      expect(parts.map((p) => p.data).join('')).toMatch(/^\{"type":"(ping|subscribe|create_task|chunk)"/);
    }
  });
});
