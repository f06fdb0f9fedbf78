/**
 * The seed's own answer shapes, read beside the project's (docs/minecraft.md, "Answers in the seed's shapes"). A model
 * prompted as the seed prompts it answers in one of three shapes; each is turned into the project's plan before
 * validation, in every plan mode:
 *
 * - high-level `{"commands": [{"action": "mine", "target": …, "quantity": …}, {"action": "craft", "item": …}]}`: each
 *   command is one action (`action` is its type; `craft`'s `item` is its recipe);
 * - low-level `{"actions": [{"type": "goto", x, y, z}, {"type": "mine", x, y, z}, {"type": "open_inventory"}, …]}`:
 *   the project's own low-level shape, with the seed's action forms (mine by coordinates, craft without a quantity);
 * - hybrid `{"plan": [{"type": "goal", "description": …, "actions": [...]}, {"type": "goto", "target": …}, …]}`: a
 *   goal entry is a goal (its actions, if any, are its actions); any other entry is a goal-level action (a `goto` or
 *   `mine` by target, or any action) and is a goal of that one action.
 *
 * Nothing here validates: the result goes through the mode's schema, so an entry that is not an action is refused
 * with the path of its field, as a project-shaped answer would be.
 */
import { actionText } from './turn-text.js';
import type { ActionSpec } from '../protocol/messages.js';

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A goal of the project's plans: its text and its actions (null: expanded when reached). */
export interface SeedGoal {
  goal: string;
  actions?: unknown[];
}

/** One seed entry as a project action: `{action: …}` (a high-level command) or `{type: …}`; `craft.item` → `recipe`. */
export function seedAction(entry: unknown): unknown {
  if (!isRec(entry)) return entry;
  let out: Rec = entry;
  if (typeof out['action'] === 'string' && out['type'] === undefined) {
    const { action, ...rest } = out;
    out = { type: action, ...rest };
  }
  if (out['type'] === 'craft' && out['recipe'] === undefined && typeof out['item'] === 'string') {
    const { item, ...rest } = out;
    out = { ...rest, recipe: item };
  }
  return out;
}

function goalOfAction(action: unknown): SeedGoal {
  let text = 'one action';
  try {
    const said = actionText(action as ActionSpec) as string | undefined;
    if (typeof said === 'string') text = said;
  } catch {
    // not an action: the schema says why
  }
  return { goal: text.slice(0, 300), actions: [action] };
}

/** The seed's hybrid `plan` entries as goals. */
function planGoals(plan: unknown[]): unknown[] {
  return plan.map((entry) => {
    if (isRec(entry) && entry['type'] === 'goal') {
      const description = entry['description'] ?? entry['goal'];
      const actions = Array.isArray(entry['actions']) ? entry['actions'].map(seedAction) : undefined;
      return {
        goal: description,
        ...(actions !== undefined && actions.length > 0 ? { actions } : {}),
      };
    }
    return goalOfAction(seedAction(entry));
  });
}

/** Whether an answer is in one of the seed's shapes (and not the project's). */
export function isSeedShape(v: unknown): boolean {
  if (!isRec(v)) return false;
  if (Array.isArray(v['commands']) || Array.isArray(v['plan'])) return true;
  return Array.isArray(v['actions']) && v['actions'].some((a) => isRec(a) && typeof a['action'] === 'string');
}

/**
 * An answer as the project's plan for `mode` (`expand`: a goal's expansion, the low-level shape). Answers in the
 * project's shapes come back unchanged; so does anything that is not a seed shape.
 */
export function fromSeedShape(v: unknown, mode: 'high-level' | 'low-level' | 'hybrid' | 'expand'): unknown {
  if (!isRec(v)) return v;
  let goals: unknown[] | null = null;
  let actions: unknown[] | null = null;
  if (Array.isArray(v['commands'])) actions = v['commands'].map(seedAction);
  else if (Array.isArray(v['plan'])) goals = planGoals(v['plan']);
  else if (Array.isArray(v['actions'])) actions = v['actions'].map(seedAction);
  else return v;
  if (mode === 'low-level' || mode === 'expand') {
    if (actions !== null) return { actions };
    // A plan is a list of actions when every goal has its actions.
    const all = (goals ?? []).map((g) => (isRec(g) && Array.isArray(g['actions']) ? g['actions'] : null));
    return all.every((a) => a !== null) ? { actions: all.flat() } : { goals };
  }
  // high-level and hybrid: goals; a list of actions is one goal per action, each with its action.
  return { goals: goals ?? (actions ?? []).map(goalOfAction) };
}
