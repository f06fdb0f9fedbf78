import { describe, expect, it } from 'vitest';
import { isAgentError } from './agent-error.js';
import { nativeOptionsFromEnv, toolDefinitions } from './native-tool-strategy.js';

describe('nativeOptionsFromEnv', () => {
  it('reads AGENT_MAX_ITERATIONS, AGENT_SYSTEM_PROMPT and TOOL_EXECUTION_TIMEOUT', () => {
    expect(
      nativeOptionsFromEnv({
        AGENT_MAX_ITERATIONS: '25',
        AGENT_SYSTEM_PROMPT: 'Be brief.',
        TOOL_EXECUTION_TIMEOUT: '30000',
        UNRELATED: 'x',
      }),
    ).toEqual({ maxIterations: 25, systemPrompt: 'Be brief.', toolTimeoutMs: 30000 });
  });

  it('ignores unset and empty variables', () => {
    expect(nativeOptionsFromEnv({ AGENT_MAX_ITERATIONS: '', AGENT_SYSTEM_PROMPT: undefined })).toEqual({});
  });

  it('rejects an invalid value with the variable name (guards against a typo silently meaning "default")', () => {
    for (const env of [
      { AGENT_MAX_ITERATIONS: 'ten' },
      { AGENT_MAX_ITERATIONS: '0' },
      { TOOL_EXECUTION_TIMEOUT: '1.5' },
    ]) {
      let caught: unknown;
      try {
        nativeOptionsFromEnv(env);
      } catch (err) {
        caught = err;
      }
      expect(isAgentError(caught, 'invalid_config')).toBe(true);
      expect((caught as Error).message).toContain(Object.keys(env)[0]);
    }
  });
});

describe('toolDefinitions', () => {
  it('uses each command JSON Schema as the tool parameters, and an empty object schema when there is none', () => {
    expect(
      toolDefinitions([
        { name: 'fs_read', description: 'Read a file.', argsSchema: { type: 'object', required: ['path'] } },
        { name: 'ping' },
      ]),
    ).toEqual([
      { name: 'fs_read', description: 'Read a file.', parameters: { type: 'object', required: ['path'] } },
      { name: 'ping', description: 'ping', parameters: { type: 'object', properties: {} } },
    ]);
  });
});
