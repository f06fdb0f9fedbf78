import { z } from 'zod';
import type { Result } from './agent-error.js';
import { extractJsonObject } from './json-extract.js';
import { TOOL_PARAMETERS, type AgentToolCall, type AgentToolName } from './tools.js';

const finalResult = z.object({ success: z.boolean(), message: z.string(), details: z.string() });

// `"parameters": "{\"path\": …}"` (an object serialised into a string) is a frequent small-model slip with one
// obvious meaning, so it is decoded rather than bounced.
const parametersObject = z.preprocess(
  (v) => {
    if (typeof v !== 'string') return v;
    try {
      const parsed: unknown = JSON.parse(v);
      return parsed;
    } catch {
      return v;
    }
  },
  z.record(z.string(), z.unknown()),
);

/**
 * zod schema of the executor's reply, checked in two stages: this object (kind, explanation, tool name among
 * `tools`, parameters an object), then the chosen tool's {@link TOOL_PARAMETERS}. Staging keeps error messages
 * short enough for a small model to act on.
 */
export function executorSchema(tools: readonly AgentToolName[]) {
  const tool = tools.length > 0 ? z.enum(tools as [AgentToolName, ...AgentToolName[]]) : z.never();
  return z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('tool'), explanation: z.string(), tool, parameters: parametersObject }),
    z.object({ kind: z.literal('final'), explanation: z.string(), result: finalResult }),
  ]);
}

/** The executor's validated reply. */
export type ExecutorOutput =
  | { kind: 'tool'; explanation: string; call: AgentToolCall }
  | { kind: 'final'; explanation: string; result: { success: boolean; message: string; details: string } };

/**
 * JSON Schema of the executor reply, passed as Ollama's `format` so decoding is constrained to it: one branch per
 * offered tool with that tool's parameter schema, plus the `final` branch when `allowFinal`.
 */
export function executorJsonSchema(
  tools: readonly AgentToolName[],
  allowFinal = true,
): Record<string, unknown> {
  const branches: z.ZodType[] = tools.map((t) =>
    z.object({
      kind: z.literal('tool'),
      explanation: z.string(),
      tool: z.literal(t),
      parameters: TOOL_PARAMETERS[t],
    }),
  );
  if (allowFinal) {
    branches.push(z.object({ kind: z.literal('final'), explanation: z.string(), result: finalResult }));
  }
  const schema =
    branches.length === 1 ? (branches[0] as z.ZodType) : z.union(branches as [z.ZodType, ...z.ZodType[]]);
  const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

/** Why an executor reply was rejected: the stage and a message appended verbatim to the repair prompt. */
export interface ExecutorValidationError {
  stage: 'json' | 'schema' | 'parameters' | 'directive';
  message: string;
  /** Tolerated syntax problems (for the step log). */
  repairs: string[];
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .slice(0, 6)
    .join('; ');
}

/**
 * Validate a raw executor reply: tolerant JSON extraction, then the zod schema, then the chosen tool's parameters.
 * `allowFinal` false rejects a `final` object (only a DONE directive may end the task). The error message names
 * what is wrong in terms the model can fix.
 */
export function validateExecutorOutput(
  raw: string,
  tools: readonly AgentToolName[],
  allowFinal = true,
): Result<{ output: ExecutorOutput; repairs: string[] }, ExecutorValidationError> {
  const json = extractJsonObject(raw);
  if (!json.ok) return { ok: false, error: { stage: 'json', message: json.error.message, repairs: [] } };
  const { repairs } = json.value;
  const parsed = executorSchema(tools).safeParse(json.value.value);
  if (!parsed.success) {
    return { ok: false, error: { stage: 'schema', message: formatIssues(parsed.error), repairs } };
  }
  const v = parsed.data;
  if (v.kind === 'final') {
    if (!allowFinal) {
      const offered = tools.length > 0 ? `a "tool" object using ${tools.join(' or ')}` : 'nothing';
      return {
        ok: false,
        error: {
          stage: 'directive',
          message: `kind "final" is only for a DONE directive; this directive needs ${offered}`,
          repairs,
        },
      };
    }
    return { ok: true, value: { output: v, repairs } };
  }
  const params = TOOL_PARAMETERS[v.tool].safeParse(v.parameters);
  if (!params.success) {
    return {
      ok: false,
      error: {
        stage: 'parameters',
        message: `parameters of ${v.tool}: ${formatIssues(params.error)}`,
        repairs,
      },
    };
  }
  const call = { tool: v.tool, parameters: params.data } as AgentToolCall;
  return { ok: true, value: { output: { kind: 'tool', explanation: v.explanation, call }, repairs } };
}
