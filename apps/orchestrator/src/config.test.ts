import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, resolveKind } from './config.js';

function file(content: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cco-cfg-'));
  const p = path.join(dir, 'config.json');
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

describe('loadConfig', () => {
  it('runs with no config: built-in general_agent, code_job and chat kinds and server defaults', () => {
    const r = loadConfig({});
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.keys(r.value.taskKinds).sort()).toEqual([
      'chat',
      'code_job',
      'general_agent',
      'resident_agent',
    ]);
    expect(r.value.taskKinds.code_job).toMatchObject({
      strategy: 'planner_executor',
      executorMode: 'parser-then-model',
    });
    expect(r.value.taskKinds.general_agent).toMatchObject({ strategy: 'native' });
    expect(r.value.server).toMatchObject({
      maxMessageBytes: 131072,
      reconnectGraceMs: 30000,
      disconnectPolicy: 'fail',
    });
    expect(r.value.models.planner).toMatchObject({ provider: 'ollama', name: 'qwen3:8b' });
  });

  it('makes strict executor replies a per-kind setting, off unless a kind turns it on', () => {
    const r = loadConfig({
      file: file({ taskKinds: { careful: { strategy: 'planner_executor', strict: true } } }),
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.taskKinds.careful?.strict).toBe(true);
    expect(r.value.taskKinds.code_job?.strict).toBe(false);
    const bad = loadConfig({
      file: file({ taskKinds: { careful: { strategy: 'planner_executor', strict: 'yes' } } }),
    });
    expect(bad.ok).toBe(false);
  });

  it('merges a file over the defaults (objects merge, arrays replace) and adds kinds', () => {
    const r = loadConfig({
      file: file({
        models: { executor: { name: 'qwen2.5-coder:1.5b', options: { temperature: 0.1 } } },
        taskKinds: {
          code_job: { allowedCommands: ['fs_write'] },
          miner: { strategy: 'native', budgets: { maxSteps: 5 } },
        },
      }),
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.models.executor.name).toBe('qwen2.5-coder:1.5b');
    expect(r.value.models.executor.options).toEqual({ temperature: 0.1, numCtx: 8192 });
    expect(r.value.taskKinds.code_job?.allowedCommands).toEqual(['fs_write']);
    expect(r.value.taskKinds.code_job?.strategy).toBe('planner_executor');
    expect(r.value.taskKinds.miner?.budgets.maxSteps).toBe(5);
  });

  it('reports every problem with its exact path (guards silent misconfiguration)', () => {
    const r = loadConfig({
      file: file({
        taskKinds: { code_job: { budgets: { maxSteps: 'ten' } }, Bad_Name: { strategy: 'native' } },
        server: { heartbeatMs: 5, typo: true },
      }),
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config_invalid');
    const issues = (r.error.details?.issues ?? []) as string[];
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^taskKinds\.code_job\.budgets\.maxSteps: expected number/),
        expect.stringMatching(/^server\.heartbeatMs: /),
        expect.stringMatching(/^server: Unrecognized key: "typo"/),
        expect.stringMatching(/^taskKinds\.Bad_Name: task kind names are lower_snake_case/),
      ]),
    );
    expect(r.error.message).toContain('taskKinds.code_job.budgets.maxSteps');
  });

  it('requires baseUrl for an openai-compatible model and a real kind behind each alias', () => {
    const r = loadConfig({
      file: file({
        models: { planner: { name: 'm', provider: 'openai-compatible' } },
        kindAliases: { x: 'missing' },
      }),
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.message).toContain(
      'models.planner.baseUrl: required when provider is "openai-compatible"',
    );
    expect(r.error.message).toContain('kindAliases.x: no task kind named "missing"');
  });

  it('gives every model role stall bounds (60 s between chunks, 5 min to the first) and takes 0 to turn them off', () => {
    const r = loadConfig({
      file: file({ models: { executor: { stallTimeoutMs: 0, firstChunkTimeoutMs: 90_000 } } }),
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.models.planner).toMatchObject({ stallTimeoutMs: 60_000, firstChunkTimeoutMs: 300_000 });
    expect(r.value.models.executor).toMatchObject({ stallTimeoutMs: 0, firstChunkTimeoutMs: 90_000 });
  });

  it('rejects a bad stall bound with its exact path and changes nothing (guards a typo silently leaving stalls unbounded)', () => {
    const r = loadConfig({
      file: file({
        models: {
          planner: { stallTimeoutMs: -1 },
          executor: { firstChunkTimeoutMs: 'five minutes' },
          native: { stallTimeoutMs: 1.5 },
        },
      }),
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const issues = (r.error.details?.issues ?? []) as string[];
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^models\.planner\.stallTimeoutMs: .*>=0/),
        expect.stringMatching(/^models\.executor\.firstChunkTimeoutMs: expected number, received string/),
        expect.stringMatching(/^models\.native\.stallTimeoutMs: expected int/),
      ]),
    );
    expect(issues).toHaveLength(3);
  });

  it('names the file when it is missing or not JSON', () => {
    const missing = loadConfig({ file: '/no/such/config.json' });
    expect(!missing.ok && missing.error.message).toMatch(/cannot read config file \/no\/such\/config\.json/);
    const bad = loadConfig({ file: file('{ nope') });
    expect(!bad.ok && bad.error.message).toMatch(/is not valid JSON/);
    const arr = loadConfig({ file: file('[]') });
    expect(!arr.ok && arr.error.message).toMatch(/\(root\): expected object/);
  });

  it('reads systemPromptFile relative to the config file', () => {
    const p = file({ taskKinds: { code_job: { systemPromptFile: 'prompt.md' } } });
    writeFileSync(path.join(path.dirname(p), 'prompt.md'), 'Be brief.');
    const r = loadConfig({ file: p });
    expect(r.ok && r.value.taskKinds.code_job?.systemPrompt).toBe('Be brief.');
  });

  it('lets CCAGENT_<ROLE>_MODEL override a model name', () => {
    const r = loadConfig({ env: { CCAGENT_NATIVE_MODEL: 'llama3.2:3b' } });
    expect(r.ok && r.value.models.native.name).toBe('llama3.2:3b');
  });

  it('resolves aliases (the Lua client default "general") to canonical kinds', () => {
    const r = loadConfig({});
    if (!r.ok) throw r.error;
    expect(resolveKind(r.value, 'general')).toBe('general_agent');
    expect(resolveKind(r.value, 'code_job')).toBe('code_job');
    expect(resolveKind(r.value, 'toString')).toBeUndefined();
  });
});
