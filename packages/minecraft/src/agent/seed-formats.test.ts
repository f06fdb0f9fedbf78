import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ActionSpecSchema } from '../protocol/messages.js';
import { planReplySchema, PLAN_MODES } from './plan-modes.js';
import { fromSeedShape } from './seed-formats.js';

const fixture = (name: string): unknown =>
  JSON.parse(
    readFileSync(path.join(import.meta.dirname, '../../test/fixtures/seed-003', `${name}.json`), 'utf8'),
  );

describe("the seed's answer shapes", () => {
  it('high-level commands validate in every mode: one action per command, craft.item as the recipe', () => {
    const seed = fixture('high-level');
    const actions = [
      { type: 'mine', target: 'oak_log', quantity: 10 },
      { type: 'craft', recipe: 'crafting_table', quantity: 1 },
    ];
    expect(planReplySchema('low-level').parse(seed)).toEqual({ actions });
    expect(planReplySchema('expand').parse(seed)).toEqual({ actions });
    for (const mode of ['high-level', 'hybrid'] as const) {
      expect(planReplySchema(mode).parse(seed)).toEqual({
        goals: [
          { goal: 'mine 10 oak_log', actions: [actions[0]] },
          { goal: 'craft crafting_table x1', actions: [actions[1]] },
        ],
      });
    }
  });

  it('low-level actions validate in every mode, mine by coordinates, open_inventory and craft without a quantity included', () => {
    const seed = fixture('low-level') as { actions: unknown[] };
    expect(planReplySchema('low-level').parse(seed)).toEqual(seed);
    for (const a of seed.actions) expect(ActionSpecSchema.safeParse(a).success).toBe(true);
    const goals = (planReplySchema('hybrid').parse(seed) as { goals: Array<{ goal: string }> }).goals;
    expect(goals.map((g) => g.goal)).toEqual([
      'goto 100 64 200',
      'mine the block at 100 63 200',
      'open the inventory',
      'craft wooden_pickaxe x1',
    ]);
    expect((planReplySchema('high-level').parse(seed) as { goals: unknown[] }).goals).toHaveLength(4);
  });

  it('a hybrid plan of goals validates in every mode, with goal-level goto and mine by target', () => {
    const seed = fixture('hybrid');
    const goals: Array<{ goal: string; actions: unknown[] }> = [
      {
        goal: 'Gather wood',
        actions: [
          { type: 'goto', target: 'oak_log' },
          { type: 'mine', target: 'oak_log', quantity: 5 },
        ],
      },
      {
        goal: 'Craft tools',
        actions: [
          { type: 'craft', recipe: 'oak_planks', quantity: 4 },
          { type: 'craft', recipe: 'stick', quantity: 2 },
        ],
      },
    ];
    expect(planReplySchema('hybrid').parse(seed)).toEqual({ goals });
    expect(planReplySchema('high-level').parse(seed)).toEqual({ goals });
    // Every goal has its actions: as a low-level plan they are one list.
    expect(planReplySchema('low-level').parse(seed)).toEqual({ actions: goals.flatMap((g) => g.actions) });
  });

  it('a plan entry that is a bare goal-level action becomes a goal of that action; a goal without actions is expanded later', () => {
    const v = fromSeedShape(
      {
        plan: [
          { type: 'goto', target: 'village' },
          { type: 'goal', description: 'find iron' },
        ],
      },
      'hybrid',
    );
    expect(planReplySchema('hybrid').parse(v)).toEqual({
      goals: [
        { goal: 'goto the nearest village', actions: [{ type: 'goto', target: 'village' }] },
        { goal: 'find iron' },
      ],
    });
    // Not a list of actions: a low-level answer must be one, and the refusal names the field.
    const r = planReplySchema('low-level').safeParse({ plan: [{ type: 'goal', description: 'find iron' }] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['actions']);
  });

  it('refuses malformed seed entries with the path of the field, in every mode', () => {
    for (const mode of [...PLAN_MODES, 'expand'] as const) {
      const bad = planReplySchema(mode).safeParse({ commands: [{ action: 'mine', x: 1, y: 2 }] });
      expect(bad.success, mode).toBe(false);
      expect(JSON.stringify(bad.error?.issues), mode).toMatch(/give all of x, y and z, or none/);
      const both = planReplySchema(mode).safeParse({
        actions: [{ type: 'goto', x: 1, y: 2, z: 3, target: 'tree' }],
      });
      expect(both.success, mode).toBe(false);
      const unknown = planReplySchema(mode).safeParse({ commands: [{ action: 'fly', height: 3 }] });
      expect(unknown.success, mode).toBe(false);
    }
    expect(ActionSpecSchema.safeParse({ type: 'mine', x: 1, y: 2, z: 3, quantity: 2 }).success).toBe(false);
    expect(ActionSpecSchema.safeParse({ type: 'mine' }).success).toBe(false);
  });

  it("keeps the project's own shapes as they were", () => {
    const own = { goals: [{ goal: 'walk to the tree' }, { goal: 'collect 3 logs' }] };
    expect(planReplySchema('high-level').parse(own)).toEqual(own);
    const low = { actions: [{ type: 'chat', message: 'hi' }] };
    expect(planReplySchema('low-level').parse(low)).toEqual(low);
  });
});
