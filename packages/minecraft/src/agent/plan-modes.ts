/**
 * The three plan shapes a model answers with, one per mode, and what each means for execution.
 *
 * - `low-level`: the whole task as one list of actions, run in order.
 * - `high-level`: a list of goals in words; when a goal is reached, the model is asked to expand that one goal into
 *   actions from the state at that moment (`{ "actions": [...] }`, the low-level shape).
 * - `hybrid`: goals, each with its actions when the model already knows them, or without when it should decide later
 *   (expanded like a high-level goal).
 */
import { z } from 'zod';
import { ActionSpecSchema } from '../protocol/messages.js';
import { fromSeedShape } from './seed-formats.js';

/** A plan mode. */
export const PLAN_MODES = ['high-level', 'low-level', 'hybrid'] as const;
/** One of {@link PLAN_MODES}. */
export type PlanMode = (typeof PLAN_MODES)[number];

const actions = z.array(ActionSpecSchema).min(1).max(32);
const goalText = z.string().min(1).max(300);

/** `low-level`: every action, in order. Also the shape of a goal's expansion. */
export const LowLevelPlanSchema = z.object({ actions });
/** `high-level`: goals in words, each expanded into actions when it is reached. */
export const HighLevelPlanSchema = z.object({
  goals: z
    .array(z.object({ goal: goalText }))
    .min(1)
    .max(16),
});
/** `hybrid`: goals with their actions where known, without where they are decided later. */
export const HybridPlanSchema = z.object({
  goals: z
    .array(z.object({ goal: goalText, actions: actions.optional() }))
    .min(1)
    .max(16),
});

/** The zod schema of a mode's plan. */
export function planSchema(mode: PlanMode): z.ZodType {
  return mode === 'low-level'
    ? LowLevelPlanSchema
    : mode === 'high-level'
      ? HighLevelPlanSchema
      : HybridPlanSchema;
}

/**
 * The schema a model's answer is validated with in a mode (`expand`: a goal's expansion): the mode's plan, or the
 * same plan written in one of the seed's shapes (`commands`, `actions` with the seed's forms, `plan`; seed-formats.ts).
 * In every mode a goal may carry its actions (a high-level answer that already knows them runs them as given).
 */
export function planReplySchema(mode: PlanMode | 'expand'): z.ZodType {
  const target = mode === 'expand' || mode === 'low-level' ? LowLevelPlanSchema : HybridPlanSchema;
  return z.preprocess((v) => fromSeedShape(v, mode), target);
}

/**
 * JSON Schema of a mode's plan, as sent in `format` for constrained decoding. With `allowed`, the action union offers
 * only the action types it lets through (the instance's allow/deny lists at this step), so a constrained model cannot
 * write a refused action; when it lets none through, the union is empty (`oneOf: []`) and no action is valid.
 */
export function planJsonSchema(
  mode: PlanMode | 'expand',
  allowed?: (type: string) => boolean,
): Record<string, unknown> {
  const schema = mode === 'expand' ? LowLevelPlanSchema : planSchema(mode);
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  delete json['$schema'];
  return allowed === undefined ? json : (onlyActions(json, allowed) as Record<string, unknown>);
}

/** The action type a branch of the action union stands for (`properties.type.const`), if it is one. */
function actionTypeOf(branch: unknown): string | undefined {
  const props = (branch as { properties?: { type?: { const?: unknown } } } | null)?.properties;
  const t = props?.type?.const;
  return typeof t === 'string' ? t : undefined;
}

/** `node` with every action union (a `oneOf` whose branches each stand for an action type) cut to `allowed`. */
function onlyActions(node: unknown, allowed: (type: string) => boolean): unknown {
  if (Array.isArray(node)) return node.map((n) => onlyActions(n, allowed));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    const union =
      k === 'oneOf' && Array.isArray(v) && v.length > 0 && v.every((b) => actionTypeOf(b) !== undefined);
    out[k] = union
      ? (v as unknown[]).filter((b) => allowed(actionTypeOf(b) as string))
      : onlyActions(v, allowed);
  }
  return out;
}
