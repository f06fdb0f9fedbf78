/**
 * Scenario files for the standalone `fake-ollama` bin: JSON that scripts models, e.g.
 * `{"models": {"qwen2.5-coder:7b": ["Hello!", {"toolCalls": [{"name": "turtle_forward", "arguments": {}}]}]},
 *   "repeat": true, "installed": ["llama3.2"], "version": "0.12.6"}`.
 */
import type { FakeReply } from './fake-types.js';
import type { FakeOllama } from './fake-ollama.js';

/** A parsed scenario file. */
export interface Scenario {
  models: Record<string, FakeReply[]>;
  /** Cycle each model's replies instead of failing once they are used up (default true for standalone runs). */
  repeat: boolean;
  installed: string[];
  version?: string;
}

/** Result of `parseScenario`: the scenario, or a message naming what is wrong. */
export type ScenarioResult = { ok: true; value: Scenario } | { ok: false; error: string };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates a scenario object (already JSON-parsed); never throws. */
export function parseScenario(input: unknown): ScenarioResult {
  if (!isRecord(input)) return { ok: false, error: 'scenario must be a JSON object' };
  const models = input['models'];
  if (!isRecord(models))
    return { ok: false, error: '"models" must be an object mapping model names to reply lists' };
  const out: Record<string, FakeReply[]> = {};
  for (const [name, replies] of Object.entries(models)) {
    if (!Array.isArray(replies)) return { ok: false, error: `models["${name}"] must be an array of replies` };
    for (const [i, r] of replies.entries()) {
      if (typeof r !== 'string' && !isRecord(r)) {
        return { ok: false, error: `models["${name}"][${i}] must be a string or an object` };
      }
      if (isRecord(r) && r['toolCalls'] !== undefined) {
        const calls = r['toolCalls'];
        if (
          !Array.isArray(calls) ||
          !calls.every((c) => isRecord(c) && typeof c['name'] === 'string' && isRecord(c['arguments']))
        ) {
          return {
            ok: false,
            error: `models["${name}"][${i}].toolCalls must be [{"name": string, "arguments": object}]`,
          };
        }
      }
    }
    out[name] = replies as FakeReply[];
  }
  const installed = input['installed'] ?? [];
  if (!Array.isArray(installed) || !installed.every((n) => typeof n === 'string')) {
    return { ok: false, error: '"installed" must be an array of model names' };
  }
  const version = input['version'];
  if (version !== undefined && typeof version !== 'string')
    return { ok: false, error: '"version" must be a string' };
  const repeat = input['repeat'] ?? true;
  if (typeof repeat !== 'boolean') return { ok: false, error: '"repeat" must be a boolean' };
  return {
    ok: true,
    value: { models: out, repeat, installed: installed as string[], ...(version ? { version } : {}) },
  };
}

/** Scripts every model of `scenario` on a running fake. */
export function applyScenario(fake: FakeOllama, scenario: Scenario): void {
  for (const [name, replies] of Object.entries(scenario.models))
    fake.script(name, replies, { repeat: scenario.repeat });
}
