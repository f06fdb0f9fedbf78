/**
 * Call the model and derive a valid answer: one request through the agent's shared model-call path (the write-ahead
 * `model_request` record, usage, cancellation), the reply's JSON validated against the plan schema, one repair with
 * the errors, then one fresh re-ask; a model failure or three invalid replies end the step.
 */
import { callModel, type ModelRole } from '@ccagent/agent';
import type { JsonValue, StepRecord, TaskErrorInfo } from '@ccagent/engine';
import type { ChatMessage, ChatOptions } from '@ccagent/models';
import type { z } from 'zod';
import { fillMcPrompt, loadMcPrompt, type McPrompt } from '../prompts.js';
import { StepFailure, toJson, type McStep } from './mc-step.js';

/** Extract the first JSON object of a reply (models wrap JSON in fences or prose). */
function extractJson(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    const start = trimmed.indexOf('{');
    const end = trimmed.lastIndexOf('}');
    if (start < 0 || end <= start) throw new Error('no JSON object in the reply');
    return JSON.parse(trimmed.slice(start, end + 1));
  }
}

function validate(
  schema: z.ZodType,
  text: string,
): { ok: true; value: unknown } | { ok: false; errors: string[] } {
  let data: unknown;
  try {
    data = extractJson(text);
  } catch (e) {
    return { ok: false, errors: [`not JSON: ${(e as Error).message}`] };
  }
  const r = schema.safeParse(data);
  if (r.success) return { ok: true, value: r.data };
  return {
    ok: false,
    errors: r.error.issues.slice(0, 8).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
  };
}

/** One JSON request of a step: what is sent, how it is checked and how it is logged. */
export interface McModelRequest {
  kind: 'mc_plan' | 'mc_replan' | 'mc_expand';
  messages: ChatMessage[];
  schema: z.ZodType;
  format: Record<string, unknown>;
  prompt: McPrompt;
  layout?: JsonValue;
}

/** The task's model role: the model, its name (the engine's limiter key) and the same options on every call. */
function roleOf(s: McStep): ModelRole {
  const numCtx = s.cfg.opts.numCtxFor?.(s.settings);
  // The same options on every request of a task: a changed load option (num_ctx) would reload the model.
  const options: ChatOptions = {
    ...(s.settings.temperature !== undefined ? { temperature: s.settings.temperature } : {}),
    ...(numCtx !== undefined ? { numCtx } : {}),
    numPredict: s.settings.maxTokens,
  };
  return {
    model: s.cfg.opts.modelFor(s.settings),
    name: s.settings.model,
    ...(Object.keys(options).length > 0 ? { options } : {}),
  };
}

/** One model call, validated and logged; a model failure ends the step as `model_failed`. */
async function attempt(
  s: McStep,
  role: ModelRole,
  req: McModelRequest,
  msgs: ChatMessage[],
  label: string,
): Promise<{ text: string; errors: string[]; value?: unknown }> {
  const settings = s.settings;
  // The shared model-call path: the write-ahead `model_request` record, usage, cancellation (as CC tasks).
  const call = await callModel(
    s.ctx,
    s.task.id,
    role,
    label,
    {
      messages: msgs,
      ...(settings.constrained ? { format: req.format } : {}),
      stream: false,
      inputExtra: { provider: settings.provider },
      ...(req.layout !== undefined && req.layout !== null ? { layout: req.layout } : {}),
    },
    req.prompt,
  );
  if (!call.response) {
    const error: TaskErrorInfo = {
      code: 'model_failed',
      message: `${settings.provider} model ${settings.model}: ${call.error?.message ?? 'the model call failed'}`,
      details: { cause: call.error?.code ?? 'error' },
    };
    await s.ctx.logStep({ ...call.record, error });
    throw new StepFailure(error);
  }
  const text = call.response.message.content;
  const v = validate(req.schema, text);
  const record: StepRecord = { ...call.record };
  if (v.ok) record.directive = toJson(v.value);
  else record.validationErrors = v.errors;
  await s.ctx.logStep(record);
  return v.ok ? { text, errors: [], value: v.value } : { text, errors: v.errors };
}

/**
 * validate → repair once → re-ask (a fresh request) once. Returns the valid answer and `exchange`: the messages
 * sent and the accepted reply. Throws {@link StepFailure} (`plan_invalid`) when all three replies are invalid.
 */
export async function modelJson(
  s: McStep,
  req: McModelRequest,
): Promise<{ value: unknown; exchange: ChatMessage[] }> {
  const role = roleOf(s);
  const messages = req.messages;
  const first = await attempt(s, role, req, messages, req.kind);
  const answered = (sent: ChatMessage[], text: string) => [
    ...sent,
    { role: 'assistant' as const, content: text },
  ];
  if (first.value !== undefined) return { value: first.value, exchange: answered(messages, first.text) };
  const repairPrompt = loadMcPrompt('repair');
  const repairMessages: ChatMessage[] = [
    ...messages,
    { role: 'assistant', content: first.text },
    { role: 'user', content: fillMcPrompt(repairPrompt.text, { errors: first.errors.join('; ') }) },
  ];
  const repaired = await attempt(s, role, req, repairMessages, `${req.kind}_repair`);
  if (repaired.value !== undefined)
    return { value: repaired.value, exchange: answered(repairMessages, repaired.text) };
  const again = await attempt(s, role, req, messages, `${req.kind}_reask`);
  if (again.value !== undefined) return { value: again.value, exchange: answered(messages, again.text) };
  throw new StepFailure({
    code: 'plan_invalid',
    message: `the model gave no valid plan after a repair and a re-ask: ${again.errors.join('; ')}`,
  });
}
