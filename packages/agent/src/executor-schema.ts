import { z } from 'zod';
import type { Result } from './agent-error.js';
import { checkDerivedCall } from './derivation.js';
import type { Directive } from './directive-parser.js';
import { parseArgsValue, undecorate } from './field-values.js';
import { extractJsonObject } from './json-extract.js';
import { TOOL_PARAMETERS, type AgentToolCall, type AgentToolName } from './tools.js';

// `details` is free text or, as seed 001's own `final` example writes it, an object (e.g. `{"runs": 3}`).
const details = z.union([z.string(), z.record(z.string(), z.unknown())]);
const finalResult = z.object({ success: z.boolean(), message: z.string(), details });

/**
 * zod schema of the executor's reply, checked in two stages: this object (kind, explanation, tool name among
 * `tools`, parameters an object), then the chosen tool's {@link TOOL_PARAMETERS}. Staging keeps error messages
 * short enough for a small model to act on.
 */
export function executorSchema(tools: readonly AgentToolName[]) {
  const tool = tools.length > 0 ? z.enum(tools as [AgentToolName, ...AgentToolName[]]) : z.never();
  return z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('tool'),
      explanation: z.string(),
      tool,
      parameters: z.record(z.string(), z.unknown()),
    }),
    z.object({ kind: z.literal('final'), explanation: z.string(), result: finalResult }),
  ]);
}

/** `result.details` of a `final` reply: text, or an object as the spec's example shows. */
export type FinalDetails = string | Record<string, unknown>;

/** The executor's validated reply. */
export type ExecutorOutput =
  | { kind: 'tool'; explanation: string; call: AgentToolCall }
  | {
      kind: 'final';
      explanation: string;
      result: { success: boolean; message: string; details: FinalDetails };
    };

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
  /**
   * `json` (not one readable JSON object, or several), `schema`, `parameters`, `directive` (a kind the directive
   * does not allow), `derivation` (a tool or parameters the directive did not ask for), `strict` (a deviation that
   * strict mode does not tolerate).
   */
  stage: 'json' | 'schema' | 'parameters' | 'directive' | 'derivation' | 'strict';
  message: string;
  /** Tolerated syntax problems (for the step log). */
  repairs: string[];
}

/** Options of {@link validateExecutorOutput}. */
export interface ExecutorValidationOptions {
  /**
   * Refuse every deviation from "exactly one JSON object of the schema" instead of tolerating it (the repair and
   * bounce then handle it). Default false.
   */
  strict?: boolean;
  /**
   * The directive being translated: a tool call is accepted only when it is exactly what the directive asks for
   * (see `checkDerived`). Without it only the shape is checked.
   */
  directive?: Directive;
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .slice(0, 6)
    .join('; ');
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Normalise one `args` value, naming what was changed; unchanged when it is not an unambiguous list of words. A
 * string is read as a directive's ARGS is (decoration removed, a JSON array or words), so `` "`[\"add\"]`" `` is
 * `["add"]`, not one argument holding the brackets.
 */
function normalizeArgs(v: unknown, where: string, repairs: string[]): unknown {
  if (typeof v === 'string') {
    const read = parseArgsValue(v);
    if (!read.ok) return v;
    repairs.push(`${where} given as a string, split into words`);
    return read.value;
  }
  if (Array.isArray(v) && v.some((a) => typeof a === 'number' || typeof a === 'boolean')) {
    repairs.push(`${where} numbers written as strings`);
    return v.map((a: unknown) => (typeof a === 'number' || typeof a === 'boolean' ? String(a) : a));
  }
  return v;
}

/** A path or command in inline code, emphasis or quotes → the value inside (named in `repairs`). */
function normalizeValue(v: unknown, where: string, repairs: string[]): unknown {
  if (typeof v !== 'string' || undecorate(v) === v) return v;
  repairs.push(`${where} ${JSON.stringify(v)} read without its decoration`);
  return undecorate(v);
}

/**
 * The shapes small models write instead of the schema's, when their meaning is unambiguous: Qwen's tool-call
 * object `{name, arguments}`, `parameters` serialised into a string, `args` as one string or with numbers. Each
 * normalisation is named in `repairs`.
 */
function normalizeShape(value: unknown, repairs: string[]): unknown {
  if (!isRecord(value)) return value;
  let v = value;
  if (v.kind === undefined && typeof v.name === 'string' && 'arguments' in v && !('tool' in v)) {
    repairs.push('tool-call object {name, arguments} read as {kind: "tool", tool, parameters}');
    v = { kind: 'tool', explanation: '', tool: v.name, parameters: v.arguments };
  }
  if (typeof v.parameters === 'string') {
    try {
      const parsed: unknown = JSON.parse(v.parameters);
      if (isRecord(parsed)) {
        repairs.push('parameters serialised into a string, decoded');
        v = { ...v, parameters: parsed };
      }
    } catch {
      // left as it is: the schema names the problem
    }
  }
  if (isRecord(v.parameters)) {
    const p: Record<string, unknown> = { ...v.parameters };
    if ('args' in p) p.args = normalizeArgs(p.args, 'args', repairs);
    if ('path' in p) p.path = normalizeValue(p.path, 'path', repairs);
    if ('command' in p) p.command = normalizeValue(p.command, 'command', repairs);
    if (Array.isArray(p.runs)) {
      p.runs = p.runs.map((r: unknown, i) =>
        isRecord(r)
          ? {
              ...r,
              ...('path' in r ? { path: normalizeValue(r.path, `runs[${i}].path`, repairs) } : {}),
              ...('args' in r ? { args: normalizeArgs(r.args, `runs[${i}].args`, repairs) } : {}),
            }
          : r,
      );
    }
    v = { ...v, parameters: p };
  }
  return v;
}

/**
 * Validate a raw executor reply: JSON extraction (exactly one object; see `extractJsonObject`), shape
 * normalisations, the zod schema, the chosen tool's parameters, and — given the directive — that the call is exactly
 * what the directive asks for. `allowFinal` false rejects a `final` object (only a DONE directive may end the
 * task). Every tolerated deviation is returned in `repairs`; with `strict` any deviation is an error instead. The
 * error message names what is wrong in terms the model can fix.
 */
export function validateExecutorOutput(
  raw: string,
  tools: readonly AgentToolName[],
  allowFinal = true,
  options: ExecutorValidationOptions = {},
): Result<{ output: ExecutorOutput; repairs: string[] }, ExecutorValidationError> {
  const json = extractJsonObject(raw);
  if (!json.ok) return { ok: false, error: { stage: 'json', message: json.error.message, repairs: [] } };
  const repairs = [...json.value.repairs];
  const shaped = normalizeShape(json.value.value, repairs);
  const parsed = executorSchema(tools).safeParse(shaped);
  if (!parsed.success) {
    return { ok: false, error: { stage: 'schema', message: formatIssues(parsed.error), repairs } };
  }
  const v = parsed.data;
  const strictError = (): Result<never, ExecutorValidationError> => ({
    ok: false,
    error: {
      stage: 'strict',
      message:
        `strict mode accepts exactly one JSON object and nothing else; this reply needed: ${repairs.join(', ')}. ` +
        'Reply with the bare JSON object.',
      repairs,
    },
  });
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
    if (options.strict && repairs.length > 0) return strictError();
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
  const known = Object.keys(TOOL_PARAMETERS[v.tool].shape);
  const d = options.directive;
  for (const key of Object.keys(v.parameters)) {
    if (known.includes(key)) continue;
    const extra = v.parameters[key];
    const matchesLanguage =
      key === 'language' &&
      d?.kind === 'WRITE_FILE' &&
      typeof extra === 'string' &&
      extra.trim().toLowerCase() === d.language.trim().toLowerCase();
    if (!matchesLanguage) {
      return {
        ok: false,
        error: {
          stage: 'derivation',
          message: `parameters of ${v.tool}: "${key}" is not a parameter of this tool and not part of the directive`,
          repairs,
        },
      };
    }
    repairs.push(`parameter "${key}" (the directive's own value) dropped: ${v.tool} has no such parameter`);
  }
  const call = { tool: v.tool, parameters: params.data } as AgentToolCall;
  if (d) {
    const derived = checkDerivedCall(d, call);
    if (!derived.ok)
      return { ok: false, error: { stage: 'derivation', message: derived.error.message, repairs } };
    repairs.push(...derived.value.tolerated);
  }
  if (options.strict && repairs.length > 0) return strictError();
  return { ok: true, value: { output: { kind: 'tool', explanation: v.explanation, call }, repairs } };
}
