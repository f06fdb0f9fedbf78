/**
 * Scenario files for the standalone `fake-ollama` bin: JSON that scripts models, e.g.
 * `{"models": {"qwen2.5-coder:7b": ["Hello!", {"toolCalls": [{"name": "turtle_forward", "arguments": {}}]}]},
 *   "repeat": true, "installed": ["llama3.2"], "version": "0.12.6"}`.
 * Validated with zod (strict objects, so a misspelt field is reported instead of silently ignored).
 */
import { z } from 'zod';
import type { FakeReply } from './fake-types.js';
import type { FakeOllama } from './fake-ollama.js';

const count = z.number().int().min(0);

const faultSchema = z.strictObject({
  latencyMs: count.optional(),
  tokenDelayMs: count.optional(),
  status: z.number().int().min(100).max(599).optional(),
  message: z.string().optional(),
  resetBeforeResponse: z.boolean().optional(),
  dropAfterChunks: count.optional(),
  malformedAfterChunks: count.optional(),
  truncateAfterChunks: count.optional(),
  stallAfterChunks: count.optional(),
  errorAfterChunks: count.optional(),
});

const toolCallSchema = z.strictObject({
  id: z.string().optional(),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
  rawArguments: z.string().optional(),
});

const replySchema = z.union([
  z.string(),
  z.strictObject({
    content: z.string().optional(),
    thinking: z.string().optional(),
    toolCalls: z.array(toolCallSchema).optional(),
    json: z.unknown().optional(),
    doneReason: z.string().optional(),
    promptEvalCount: count.optional(),
    evalCount: count.optional(),
    chunkChars: z.number().int().min(1).optional(),
    fault: faultSchema.optional(),
  }),
]);

const scenarioSchema = z.strictObject({
  models: z.record(z.string().min(1), z.array(replySchema)),
  repeat: z.boolean().default(true),
  installed: z.array(z.string().min(1)).default([]),
  version: z.string().optional(),
});

/** A parsed scenario file. */
export interface Scenario {
  models: Record<string, FakeReply[]>;
  /** Cycle each model's replies instead of failing once they are used up (default true for standalone runs). */
  repeat: boolean;
  /** Models listed as installed without a script. */
  installed: string[];
  version?: string;
}

/** Result of `parseScenario`: the scenario, or a message naming each problem with its JSON path. */
export type ScenarioResult = { ok: true; value: Scenario } | { ok: false; error: string };

/** Validates a scenario object (already JSON-parsed); never throws. */
export function parseScenario(input: unknown): ScenarioResult {
  const parsed = scenarioSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
      return `${path === '' ? '(root)' : path.replace(/^\./, '')}: ${issue.message}`;
    });
    return { ok: false, error: problems.join('; ') };
  }
  const { models, repeat, installed, version } = parsed.data;
  return {
    ok: true,
    value: {
      models: models as Record<string, FakeReply[]>,
      repeat,
      installed,
      ...(version !== undefined ? { version } : {}),
    },
  };
}

/** Scripts every model of `scenario` on a running fake. */
export function applyScenario(fake: FakeOllama, scenario: Scenario): void {
  for (const [name, replies] of Object.entries(scenario.models))
    fake.script(name, replies, { repeat: scenario.repeat });
}
