import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema, DEFAULT_CONFIG } from './config.js';
import { CLOSE_CODES } from './ws/close-codes.js';

const doc = (name: string): string => readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

/** Keys of a zod object schema (unwrapping defaults/optionals). */
function keysOf(schema: unknown): string[] {
  let s = schema as {
    def?: { innerType?: unknown; type?: string; shape?: Record<string, unknown> };
    shape?: Record<string, unknown>;
  };
  while (s.def?.innerType !== undefined) s = s.def.innerType as typeof s;
  return Object.keys(s.shape ?? s.def?.shape ?? {});
}

describe('docs stay in step with the code', () => {
  it('docs/configuration.md documents every config key (guards undocumented or renamed settings)', () => {
    const text = doc('configuration.md');
    const shape = (configSchema as unknown as { def: { in?: { shape: Record<string, unknown> } } }).def;
    const top = (shape.in ?? (configSchema as unknown as { shape: Record<string, unknown> })).shape;
    const models = keysOf((top.models as { shape: Record<string, unknown> }).shape.planner);
    const kinds = keysOf((top.taskKinds as { def: { valueType: unknown } }).def.valueType);
    const server = keysOf(top.server);
    expect(models.length).toBeGreaterThan(5);
    expect(kinds.length).toBeGreaterThan(10);
    expect(server.length).toBeGreaterThan(10);
    for (const k of [...models, ...kinds, ...server, ...Object.keys(top)]) {
      expect(text, k).toMatch(new RegExp('`(?:[a-zA-Z]+\\.)?' + k + '(?:\\.[a-zA-Z{},.]+)?`'));
    }
    for (const kind of Object.keys(DEFAULT_CONFIG.taskKinds)) expect(text).toContain(`**\`${kind}\`**`);
  });

  it('docs/http-api.md lists every route and close code', () => {
    const text = doc('http-api.md');
    for (const r of [
      'GET /health',
      'GET /metrics',
      'GET /api/tasks`',
      'GET /api/tasks/:id',
      'POST /api/tasks`',
      'POST /api/tasks/:id/cancel',
      'POST /api/tasks/:id/answer',
      'GET /api/clients',
      'GET /api/tools',
      'GET /api/events',
      'GET /api/dashboard',
      'GET /` — the dashboard',
      'GET /api/minecraft/instances',
      'POST /api/minecraft/tasks`',
      'POST /api/minecraft/instances/:id/stop',
      'POST /api/minecraft/tasks/:id/retry',
      'GET /lua/install.lua',
      'GET /lua/manifest.json',
      'GET /lua/files/<path>',
    ]) {
      expect(text, r).toContain(r);
    }
    for (const code of Object.values(CLOSE_CODES)) expect(text).toContain(`| ${code} |`);
  });
});
