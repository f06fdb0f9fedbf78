import { describe, expect, it } from 'vitest';
import { executorJsonSchema, validateExecutorOutput } from './executor-schema.js';
import { AGENT_TOOL_NAMES } from './tools.js';

const ALL = AGENT_TOOL_NAMES;

describe('validateExecutorOutput', () => {
  it('accepts a tool call and applies parameter defaults', () => {
    const r = validateExecutorOutput(
      '{"kind":"tool","explanation":"run","tool":"cc_run_program","parameters":{"path":"a.lua"}}',
      ALL,
    );
    expect(r).toEqual({
      ok: true,
      value: {
        output: {
          kind: 'tool',
          explanation: 'run',
          call: { tool: 'cc_run_program', parameters: { path: 'a.lua', args: [] } },
        },
        repairs: [],
      },
    });
  });

  it('accepts a final result from a fenced reply with trailing commas and reports the repairs', () => {
    const r = validateExecutorOutput(
      '```json\n{"kind":"final","explanation":"x","result":{"success":true,"message":"ok","details":"",},}\n```',
      ALL,
    );
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.repairs).toEqual(['code fence removed', 'trailing commas']);
  });

  it('rejects an invented tool with the list of real ones (guards against calling a tool that does not exist)', () => {
    const r = validateExecutorOutput(
      '{"kind":"tool","explanation":"","tool":"write_file","parameters":{"path":"a"}}',
      ['cc_write', 'cc_shell'],
    );
    expect(r).toMatchObject({ ok: false, error: { stage: 'schema' } });
    if (!r.ok) expect(r.error.message).toMatch(/tool.*cc_write.*cc_shell/);
  });

  it('rejects missing fields and bad parameters with their paths', () => {
    const a = validateExecutorOutput('{"kind":"tool","tool":"cc_shell","parameters":{}}', ALL);
    expect(a).toMatchObject({ ok: false, error: { stage: 'schema' } });
    if (!a.ok) expect(a.error.message).toContain('explanation');
    const b = validateExecutorOutput(
      '{"kind":"tool","explanation":"","tool":"cc_shell","parameters":{"cmd":"ls"}}',
      ALL,
    );
    expect(b).toMatchObject({ ok: false, error: { stage: 'parameters' } });
    if (!b.ok) expect(b.error.message).toContain('command');
    const c = validateExecutorOutput('not json at all', ALL);
    expect(c).toMatchObject({ ok: false, error: { stage: 'json' } });
  });
});

describe('executorJsonSchema', () => {
  it('is a JSON Schema with one branch per offered tool and its parameters (what Ollama gets as format)', () => {
    const schema = executorJsonSchema(['cc_write', 'cc_shell']);
    const text = JSON.stringify(schema);
    expect(text).toContain('"const":"cc_write"');
    expect(text).toContain('"const":"cc_shell"');
    expect(text).toContain('"const":"final"');
    expect(text).not.toContain('cc_run_program');
    const branches = schema.anyOf as Array<{ properties: { parameters?: { required?: string[] } } }>;
    expect(branches).toHaveLength(3);
    expect(branches[0]?.properties.parameters?.required).toEqual(['path', 'content']);
  });

  it('leaves out the final branch when the directive is not DONE, and is a single object for one tool', () => {
    const schema = executorJsonSchema(['cc_run_program'], false);
    expect(schema.anyOf).toBeUndefined();
    expect(JSON.stringify(schema)).not.toContain('final');
    expect(schema.required).toEqual(['kind', 'explanation', 'tool', 'parameters']);
  });
});
