import { describe, expect, it } from 'vitest';
import { parseClientMessage } from './index.js';

describe('tools_update', () => {
  it('accepts a full registry snapshot (guards the shape the Lua client and orchestrator code against)', () => {
    const raw = JSON.stringify({
      type: 'tools_update',
      tools: [
        {
          name: 'count_logs',
          status: 'active',
          version: 3,
          description: 'd',
          file: '/tools/a.lua',
          updated_at: 1,
        },
        { name: 'x', status: 'draft', version: 1 },
      ],
    });
    const r = parseClientMessage(raw);
    expect(r).toEqual({ ok: true, value: JSON.parse(raw) });
  });

  it('accepts an empty snapshot (a client with no tools must be able to say so)', () => {
    expect(parseClientMessage('{"type":"tools_update","tools":[]}').ok).toBe(true);
  });

  it('rejects an unknown tool status with its path (guards against silently storing garbage statuses)', () => {
    const r = parseClientMessage(
      '{"type":"tools_update","tools":[{"name":"a","status":"live","version":1}]}',
    );
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.path).toBe('$.tools[0].status');
  });

  it('accepts the optional tools list in hello', () => {
    const r = parseClientMessage(
      '{"type":"hello","client_id":"c","protocol_version":1,"commands":[],"tools":[{"name":"a","status":"test","version":2}]}',
    );
    expect(r.ok && r.value.type === 'hello' && r.value.tools?.[0]?.status).toBe('test');
  });
});
