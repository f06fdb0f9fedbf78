import type { ModelsResponse } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { renderModels } from './render-models.js';

const out = { color: false, width: 200, wrap: false, write: () => {} };

const view: ModelsResponse = {
  roles: [
    { role: 'native', name: 'qwen3:8b', provider: 'pool', url: 'http://gpu1:11434, http://gpu2:11434' },
  ],
  pools: [
    {
      name: 'http://gpu1:11434, http://gpu2:11434',
      queued: 3,
      servers: [
        {
          name: 'http://gpu1:11434',
          provider: 'ollama',
          state: 'up',
          concurrency: 2,
          in_flight: 2,
          queued: 3,
          calls: 40,
          failures: 0,
          failovers: 0,
          wait_ms_total: 20_000,
          wait_ms_max: 2_500,
          affinity_hits: 27,
          affinity_misses: 3,
          affinity_hit_rate: 0.9,
        },
        {
          name: 'http://gpu2:11434',
          provider: 'ollama',
          state: 'down',
          concurrency: 1,
          in_flight: 0,
          queued: 0,
          calls: 5,
          failures: 2,
          failovers: 1,
          wait_ms_total: 0,
          wait_ms_max: 0,
          affinity_hits: 0,
          affinity_misses: 0,
          affinity_hit_rate: null,
          last_error: { code: 'connection', message: 'refused\u001b[2J', at: 0 },
          next_probe_at: 4_000,
        },
      ],
    },
  ],
};

describe('ccagent models', () => {
  it('lists the roles and each pool server with state, load, waits, failures and affinity (guards against an operator blind to a dead GPU box)', () => {
    const text = renderModels(out, view, 1_000);
    expect(text).toContain('native  qwen3:8b  pool      http://gpu1:11434, http://gpu2:11434');
    expect(text).toContain('pool http://gpu1:11434, http://gpu2:11434: 3 waiting');
    const lines = text.split('\n');
    const gpu1 = lines.find((l) => l.startsWith('http://gpu1:11434')) ?? '';
    const gpu2 = lines.find((l) => l.startsWith('http://gpu2:11434')) ?? '';
    expect(gpu1.split(/\s{2,}/)).toEqual([
      'http://gpu1:11434',
      'up',
      '2/2',
      '3',
      '40',
      '0/0',
      '500 ms / 2.5 s',
      '90% of 30',
    ]);
    expect(gpu2).toContain('down, probe in 3.0 s');
    expect(gpu2).toContain('2/1');
    // A server's error text is shown inert: no escape sequence reaches the terminal.
    expect(gpu2).toContain('connection: refused\\u001b[2J');
    expect(text).not.toContain('\u001b');
  });

  it('says so when no role has a pool', () => {
    expect(renderModels(out, { roles: view.roles, pools: [] }, 0)).toContain('no pools of servers');
  });
});
