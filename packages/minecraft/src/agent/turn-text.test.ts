import { describe, expect, it } from 'vitest';
import type { PlayerState } from '../protocol/messages.js';
import { actionText, resultLine, resultLines, stateLine, vitalsText } from './turn-text.js';

const place = (x: number, z: number) => ({ type: 'place' as const, block: 'cobblestone', x, y: 63, z });

describe('the conversation text of actions, results and state', () => {
  it('writes each action in a few words with every parameter (guards against a parameter the model needs going missing)', () => {
    expect(actionText({ type: 'goto', x: 30, y: 70, z: -6 })).toBe('goto 30 70 -6');
    expect(actionText({ type: 'mine', target: 'stone', quantity: 7 })).toBe('mine 7 stone');
    expect(actionText(place(19, 20))).toBe('place cobblestone at 19 63 20');
    expect(actionText({ type: 'craft', recipe: 'torch', quantity: 4 })).toBe('craft torch x4');
    expect(actionText({ type: 'smelt', item: 'iron_ore', quantity: 3 })).toBe('smelt 3 iron_ore');
    expect(actionText({ type: 'interact', target: 'lever', x: 1, y: 64, z: 1 })).toBe(
      'interact with lever at 1 64 1',
    );
    expect(actionText({ type: 'chat', message: 'done "now"' })).toBe('chat "done \\"now\\""');
  });

  it('drops what a result only repeats of its action and keeps what it adds (guards against results that say everything twice, and against losing a count or a position)', () => {
    // The bridge's mineflayer runner's results.
    expect(
      resultLine({ action: place(19, 19), ok: true, detail: { placed: 'cobblestone', at: [19, 63, 19] } }),
    ).toBe('- place cobblestone at 19 63 19 → done');
    expect(
      resultLine({ action: { type: 'mine', target: 'stone', quantity: 7 }, ok: true, detail: { mined: 7 } }),
    ).toBe('- mine 7 stone → done');
    // A goto that ended inside its target block arrived; one that ended elsewhere says where.
    const goto = { type: 'goto' as const, x: 30, y: 70, z: -6 };
    expect(resultLine({ action: goto, ok: true, detail: { position: { x: 30.5, y: 70, z: -5.5 } } })).toBe(
      '- goto 30 70 -6 → done',
    );
    expect(resultLine({ action: goto, ok: true, detail: { position: { x: 28.31, y: 70, z: -5.5 } } })).toBe(
      '- goto 30 70 -6 → done (position 28.3 70 -5.5)',
    );
    expect(
      resultLine({
        action: { type: 'smelt', item: 'iron_ore', quantity: 3 },
        ok: true,
        detail: { smelted: 'iron_ore', count: 2 },
      }),
    ).toBe('- smelt 3 iron_ore → done (count 2)');
    // A mod's own words are kept as they are.
    expect(resultLine({ action: goto, ok: true, detail: 'arrived, but the path was flooded' })).toBe(
      '- goto 30 70 -6 → done (arrived, but the path was flooded)',
    );
  });

  it('writes a failure once, with a code other than the generic one, a time-out and a contradiction (guards against the reason of a failure being lost)', () => {
    expect(
      resultLine({
        action: place(21, 21),
        ok: false,
        detail: { error: '21 63 21 is not empty (oak_log)', code: 'action_failed' },
      }),
    ).toBe('- place cobblestone at 21 63 21 → FAILED: 21 63 21 is not empty (oak_log)');
    expect(
      resultLine({
        action: { type: 'interact', target: 'lever', x: 1, y: 64, z: 1 },
        ok: false,
        detail: { error: 'no answer within 1000 ms', code: 'timeout', timedOut: true },
      }),
    ).toBe('- interact with lever at 1 64 1 → FAILED: no answer within 1000 ms (timeout, timed out)');
    expect(
      resultLine({
        action: { type: 'goto', x: 20, y: 64, z: 20 },
        ok: false,
        detail: {
          result: 'ok',
          contradiction: 'after goto 20 64 20 the player is at 0.5 64.0 0.5, 27.6 blocks away',
        },
      }),
    ).toBe(
      '- goto 20 64 20 → FAILED: the state contradicts the plan: after goto 20 64 20 the player is at 0.5 64.0 0.5, 27.6 blocks away',
    );
  });

  it('puts a run of the same action done at several places on one line, and nothing else (guards against a floor of 9 blocks costing 9 lines, and against merging what differs)', () => {
    const results = [
      { action: { type: 'goto' as const, x: 20, y: 64, z: 20 }, ok: true, detail: null },
      ...[19, 20, 21].map((z) => ({
        action: place(19, z),
        ok: true,
        detail: { placed: 'cobblestone', at: [19, 63, z] },
      })),
      { action: { ...place(20, 19), block: 'oak_planks' }, ok: true, detail: null },
      { action: place(20, 20), ok: false, detail: { error: 'no cobblestone in the inventory' } },
      { action: place(20, 21), ok: true, detail: null },
    ];
    expect(resultLines(results)).toBe(
      [
        '- goto 20 64 20 → done',
        '- place cobblestone at 19 63 19; 19 63 20; 19 63 21 → done (3)',
        '- place oak_planks at 20 63 19 → done',
        '- place cobblestone at 20 63 20 → FAILED: no cobblestone in the inventory',
        '- place cobblestone at 20 63 21 → done',
      ].join('\n'),
    );
  });

  it('writes the vitals only when they changed since the conversation last showed them (guards against repeating them in every message, and against hiding a change)', () => {
    const s: PlayerState = {
      position: { x: 1.25, y: 64, z: -3 },
      health: 20,
      hunger: 17,
      saturation: 3,
      inventory: [
        { slot: 36, item: 'cobblestone', count: 6 },
        { slot: 37, item: 'coal', count: 3 },
      ],
      dimension: 'overworld',
      gameMode: 'survival',
    };
    const full =
      'position 1.3 64.0 -3.0; inventory: cobblestone x6, coal x3; health 20, hunger 17, saturation 3; dimension overworld, game mode survival';
    expect(stateLine(s, null)).toBe(full);
    expect(stateLine(s, vitalsText(s))).toBe('position 1.3 64.0 -3.0; inventory: cobblestone x6, coal x3');
    expect(stateLine({ ...s, health: 12 }, vitalsText(s))).toMatch(/; health 12, hunger 17/);
    expect(stateLine({ ...s, inventory: [] }, vitalsText(s))).toBe(
      'position 1.3 64.0 -3.0; inventory: empty',
    );
  });
});
