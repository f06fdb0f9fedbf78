import { ModelPool } from '@ccagent/models';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { systemClock } from '@ccagent/engine';
import { setupModels } from './strategies.js';

// `models.<role>.servers`: a pool of servers for one role. Bad pools are refused at load with the exact path and
// what is wrong, and nothing else of the configuration is used.

const logger = { warn: () => {}, debug: () => {} };

function errorsOf(overrides: Record<string, unknown>): string[] {
  const r = loadConfig({ overrides });
  if (r.ok) return [];
  return (r.error.details as { issues: string[] }).issues;
}

describe('model pool configuration', () => {
  it('accepts several servers per role with their own concurrency, and fills the pool defaults', () => {
    const r = loadConfig({
      overrides: {
        models: {
          planner: {
            servers: [
              { baseUrl: 'http://gpu1:11434', concurrency: 2 },
              { baseUrl: 'http://gpu2:8080/v1', provider: 'openai-compatible' },
            ],
          },
        },
      },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.models.planner.servers).toEqual([
      { baseUrl: 'http://gpu1:11434', concurrency: 2 },
      { baseUrl: 'http://gpu2:8080/v1', provider: 'openai-compatible', concurrency: 1 },
    ]);
    expect(r.value.models.planner.pool).toEqual({
      affinityWaitMs: 2000,
      probeIntervalMs: 15000,
      probeBackoffMs: 1000,
      maxProbeBackoffMs: 60000,
    });
  });

  it('refuses bad pools with the path and the reason (guards against a pool that silently serves from one box)', () => {
    expect(errorsOf({ models: { planner: { servers: [] } } })).toEqual([
      'models.planner.servers: Too small: expected array to have >=1 items',
    ]);
    expect(
      errorsOf({ models: { planner: { baseUrl: 'http://a:1', servers: [{ baseUrl: 'http://b:1' }] } } }),
    ).toEqual([
      'models.planner.baseUrl: give either baseUrl or servers, not both (each server has its own baseUrl and apiKeyEnv)',
    ]);
    expect(
      errorsOf({
        models: {
          native: { servers: [{ baseUrl: 'http://gpu1:11434' }, { baseUrl: 'http://gpu1:11434/' }] },
        },
      }),
    ).toEqual(['models.native.servers.1.baseUrl: the same server as servers.0 (http://gpu1:11434/)']);
    expect(
      errorsOf({ models: { executor: { servers: [{ baseUrl: 'http://gpu1:11434', concurrency: 0 }] } } }),
    ).toEqual(['models.executor.servers.0.concurrency: Too small: expected number to be >0']);
    expect(errorsOf({ models: { executor: { servers: [{ baseUrl: 'ftp://gpu1' }] } } })).toHaveLength(1);
    expect(errorsOf({ models: { executor: { servers: [{ url: 'http://gpu1:11434' }] } } })[0]).toMatch(
      /^models\.executor\.servers\.0/,
    );
    expect(
      errorsOf({
        models: {
          planner: { servers: [{ baseUrl: 'http://gpu1:11434', concurrency: 2 }] },
          executor: { servers: [{ baseUrl: 'http://gpu1:11434', concurrency: 1 }] },
        },
      }),
    ).toEqual([
      "models.executor.servers.0.concurrency: 1, but models.planner.servers.0 gives the same server concurrency 2: it is the server's, one value",
    ]);
    expect(
      errorsOf({ models: { planner: { pool: { probeBackoffMs: 5000, maxProbeBackoffMs: 1000 } } } }),
    ).toEqual(['models.planner.pool.maxProbeBackoffMs: must be at least probeBackoffMs (5000)']);
  });

  it('lets an openai-compatible role give servers instead of baseUrl', () => {
    expect(
      errorsOf({
        models: { native: { provider: 'openai-compatible', servers: [{ baseUrl: 'http://a:8080/v1' }] } },
      }),
    ).toEqual([]);
    expect(errorsOf({ models: { native: { provider: 'openai-compatible' } } })).toEqual([
      'models.native.baseUrl: required when provider is "openai-compatible" (or give servers)',
    ]);
  });

  it('builds one pool shared by the roles naming the same servers, and leaves the engine limit of pooled models to it', () => {
    const servers = [
      { baseUrl: 'http://127.0.0.1:1', concurrency: 2 },
      { baseUrl: 'http://127.0.0.1:2', concurrency: 1 },
    ];
    const r = loadConfig({
      overrides: { models: { planner: { servers }, executor: { servers }, native: { name: 'other:1b' } } },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const setup = setupModels(r.value, {
      ollamaUrl: 'http://127.0.0.1:3',
      env: {},
      logger,
      clock: systemClock,
    });
    expect([...setup.pools.keys()]).toEqual(['http://127.0.0.1:1, http://127.0.0.1:2']);
    const pool = [...setup.pools.values()][0]!;
    expect(pool).toBeInstanceOf(ModelPool);
    expect(pool.snapshot().servers.map((s) => [s.name, s.concurrency])).toEqual([
      ['http://127.0.0.1:1', 2],
      ['http://127.0.0.1:2', 1],
    ]);
    expect(setup.modelConcurrency['qwen3:8b']).toBeGreaterThanOrEqual(1000);
    expect(setup.modelConcurrency['other:1b']).toBe(1);
    expect(setup.used.find((u) => u.role === 'planner')).toMatchObject({
      provider: 'pool',
      url: 'http://127.0.0.1:1, http://127.0.0.1:2',
    });
    pool.close();
  });
});
