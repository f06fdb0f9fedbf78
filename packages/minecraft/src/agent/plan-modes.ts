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

/** JSON Schema of a mode's plan, as sent in `format` for constrained decoding. */
export function planJsonSchema(mode: PlanMode | 'expand'): Record<string, unknown> {
  const schema = mode === 'expand' ? LowLevelPlanSchema : planSchema(mode);
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  delete json['$schema'];
  return json;
}
