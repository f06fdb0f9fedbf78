/**
 * The bridge bot's game side: a mineflayer bot (with mineflayer-pathfinder) that runs protocol actions as a real
 * player on any Java Edition server, and reports its state. Loaded lazily: importing the package does not load
 * mineflayer.
 */
import { createRequire } from 'node:module';
import type { Bot } from 'mineflayer';
import type * as MineflayerModule from 'mineflayer';
import type * as PathfinderModule from 'mineflayer-pathfinder';
import type * as Vec3Module from 'vec3';
import type { Block } from 'prismarine-block';
import { MinecraftError } from '../minecraft-error.js';
import type { Action, PlayerState } from '../protocol/messages.js';
import type { ActionRunner, RunOutcome } from './mod-client.js';

type Mineflayer = typeof MineflayerModule;
type Pathfinder = typeof PathfinderModule;
type Vec3Ctor = typeof Vec3Module.Vec3;

const require = createRequire(import.meta.url);

/** Options of {@link startMineflayerBot}. */
export interface MineflayerBotOptions {
  host: string;
  port: number;
  username: string;
  /** Minecraft version (e.g. `1.18.2`); default: asked from the server. */
  version?: string;
  /** `offline` (default; servers in offline mode) or `microsoft`. */
  auth?: 'offline' | 'microsoft';
  /** How far `mine` looks for blocks, in blocks (default 32). */
  searchRadius?: number;
}

/** A connected bot and its {@link ActionRunner}. */
export interface MineflayerBot {
  bot: Bot;
  runner: ActionRunner;
  /** Call `fn` when the player's state may have changed (moved, health, inventory), at most every 200 ms. */
  onStateChange(fn: () => void): void;
  quit(): void;
}

/** A number for the wire: the server may not have sent a value yet (NaN/undefined), which JSON cannot carry. */
function finite(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

function abortable<T>(p: Promise<T>, signal: AbortSignal, onAbort: () => void): Promise<T> {
  if (signal.aborted) {
    onAbort();
    return Promise.reject(new Error('stopped'));
  }
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => {
      onAbort();
      reject(new Error('stopped'));
    };
    signal.addEventListener('abort', abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/**
 * Join the server as a player and resolve once spawned with the bot and its action runner. Rejects with
 * `MinecraftError('bridge_failed')` when the server refuses or does not answer.
 */
export async function startMineflayerBot(opts: MineflayerBotOptions): Promise<MineflayerBot> {
  let mineflayer: Mineflayer;
  let pf: Pathfinder;
  let Vec3: Vec3Ctor;
  try {
    mineflayer = require('mineflayer') as Mineflayer;
    pf = require('mineflayer-pathfinder') as Pathfinder;
    ({ Vec3 } = require('vec3') as { Vec3: Vec3Ctor });
  } catch (cause) {
    throw new MinecraftError(
      'bridge_failed',
      'the bridge needs mineflayer (optional peer dependencies): npm install mineflayer@4.25.0 ' +
        `mineflayer-pathfinder@2.4.5 prismarine-item vec3 (${(cause as Error).message})`,
      { cause },
    );
  }
  const bot = mineflayer.createBot({
    host: opts.host,
    port: opts.port,
    username: opts.username,
    auth: opts.auth ?? 'offline',
    ...(opts.version !== undefined ? { version: opts.version } : {}),
  });
  bot.loadPlugin(pf.pathfinder);
  await new Promise<void>((resolve, reject) => {
    const fail = (why: unknown): void =>
      reject(new MinecraftError('bridge_failed', `cannot join ${opts.host}:${opts.port}: ${String(why)}`));
    bot.once('spawn', () => resolve());
    bot.once('error', fail);
    bot.once('kicked', fail);
    bot.once('end', fail);
  });
  const movements = new pf.Movements(bot);
  bot.pathfinder.setMovements(movements);
  const radius = opts.searchRadius ?? 32;

  const goto = (goal: InstanceType<Pathfinder['goals']['Goal']>, signal: AbortSignal): Promise<void> =>
    abortable(bot.pathfinder.goto(goal), signal, () => bot.pathfinder.stop());

  const blockId = (name: string): number => {
    const b = bot.registry.blocksByName[name];
    if (b === undefined) throw new Error(`unknown block ${name}`);
    return b.id;
  };

  const entityName = (e: { name?: string | undefined; username?: string | undefined }): string =>
    e.username ?? e.name ?? 'entity';

  /** The nearest entity (not this player) whose name or username is `name`, within the search radius. */
  const nearestEntity = (name: string): Bot['entity'] | null => {
    const me = bot.entity.position;
    let best: Bot['entity'] | null = null;
    for (const e of Object.values(bot.entities)) {
      if (e === bot.entity || (e.name !== name && e.username !== name)) continue;
      const d = e.position.distanceTo(me);
      if (d <= radius && (best === null || d < best.position.distanceTo(me))) best = e;
    }
    return best;
  };

  /** Where the nearest block or entity named `name` is, or null. */
  const nearest = (name: string): { x: number; y: number; z: number } | null => {
    const block = bot.registry.blocksByName[name];
    if (block !== undefined) {
      const found = bot.findBlock({ matching: block.id, maxDistance: radius });
      if (found !== null) return found.position;
    }
    return nearestEntity(name)?.position ?? null;
  };

  const ensureItem = async (name: string): Promise<void> => {
    if (bot.inventory.items().some((i) => i.name === name)) return;
    const item = bot.registry.itemsByName[name];
    if (item === undefined) throw new Error(`unknown item ${name}`);
    if (bot.game.gameMode !== 'creative') throw new Error(`no ${name} in the inventory`);
    const Item = require('prismarine-item')(bot.registry) as new (type: number, count: number) => never;
    await bot.creative.setInventorySlot(36, new Item(item.id, 1));
  };

  const run = async (action: Action, signal: AbortSignal): Promise<RunOutcome> => {
    switch (action.type) {
      case 'goto': {
        if (action.target !== undefined) {
          // Goal-level: the nearest block or entity of that name.
          const there = nearest(action.target);
          if (there === null) return { ok: false, error: `no ${action.target} within ${radius} blocks` };
          await goto(new pf.goals.GoalNear(there.x, there.y, there.z, 2), signal);
        } else {
          await goto(
            new pf.goals.GoalBlock(
              Math.floor(action.x ?? 0),
              Math.floor(action.y ?? 0),
              Math.floor(action.z ?? 0),
            ),
            signal,
          );
        }
        const p = bot.entity.position;
        return { ok: true, result: { position: { x: p.x, y: p.y, z: p.z } } };
      }
      case 'open_inventory':
        // A player's own inventory needs no server round trip to read: the result is its contents.
        return {
          ok: true,
          result: {
            inventory: bot.inventory.items().map((i) => ({ slot: i.slot, item: i.name, count: i.count })),
          },
        };
      case 'chat':
        bot.chat(action.message);
        return { ok: true, result: { said: action.message } };
      case 'mine': {
        if (action.target === undefined) {
          // The one block at x y z.
          const at = new Vec3(action.x ?? 0, action.y ?? 0, action.z ?? 0);
          const block = bot.blockAt(at);
          if (block === null) return { ok: false, error: `${at.x} ${at.y} ${at.z} is not loaded` };
          if (block.name === 'air' || block.name === 'cave_air') {
            return { ok: false, error: `there is no block at ${at.x} ${at.y} ${at.z}` };
          }
          await goto(new pf.goals.GoalLookAtBlock(block.position, bot.world), signal);
          await abortable(bot.dig(block, true), signal, () => bot.stopDigging());
          return { ok: true, result: { mined: block.name, at: [at.x, at.y, at.z] } };
        }
        const quantity = action.quantity ?? 1;
        const id = blockId(action.target);
        let mined = 0;
        while (mined < quantity) {
          if (signal.aborted) throw new Error('stopped');
          const found = bot.findBlock({ matching: id, maxDistance: radius });
          if (found === null) break;
          await goto(new pf.goals.GoalLookAtBlock(found.position, bot.world), signal);
          await abortable(bot.dig(found, true), signal, () => bot.stopDigging());
          mined++;
        }
        if (mined === 0) return { ok: false, error: `no ${action.target} within ${radius} blocks` };
        if (mined < quantity) {
          return {
            ok: false,
            error: `mined ${mined} of ${quantity} ${action.target}: no more within ${radius} blocks`,
          };
        }
        return { ok: true, result: { mined } };
      }
      case 'place': {
        const target = new Vec3(action.x, action.y, action.z);
        const there = bot.blockAt(target);
        if (there === null) return { ok: false, error: `${action.x} ${action.y} ${action.z} is not loaded` };
        if (there.name !== 'air' && there.name !== 'cave_air' && there.name !== 'water') {
          return { ok: false, error: `${action.x} ${action.y} ${action.z} is not empty (${there.name})` };
        }
        const faces = [
          new Vec3(0, -1, 0),
          new Vec3(0, 1, 0),
          new Vec3(1, 0, 0),
          new Vec3(-1, 0, 0),
          new Vec3(0, 0, 1),
          new Vec3(0, 0, -1),
        ];
        let ref: Block | null = null;
        let face = faces[0] ?? new Vec3(0, 1, 0);
        for (const f of faces) {
          const b = bot.blockAt(target.plus(f));
          if (b !== null && b.boundingBox === 'block') {
            ref = b;
            face = f.scaled(-1);
            break;
          }
        }
        if (ref === null)
          return { ok: false, error: `no solid block next to ${action.x} ${action.y} ${action.z}` };
        await ensureItem(action.block);
        if (bot.entity.position.distanceTo(target) > 4) {
          await goto(new pf.goals.GoalNear(action.x, action.y, action.z, 3), signal);
        }
        const item = bot.inventory.items().find((i) => i.name === action.block);
        if (item === undefined) return { ok: false, error: `no ${action.block} in the inventory` };
        await bot.equip(item, 'hand');
        await abortable(bot.placeBlock(ref, face), signal, () => undefined);
        return { ok: true, result: { placed: action.block, at: [action.x, action.y, action.z] } };
      }
      case 'interact': {
        if (action.x === undefined || action.y === undefined || action.z === undefined) {
          // No coordinates: the nearest entity of that name (a villager, a cow, a boat).
          const entity = nearestEntity(action.target);
          if (entity === null) return { ok: false, error: `no ${action.target} within ${radius} blocks` };
          const e = entity.position;
          await goto(new pf.goals.GoalNear(e.x, e.y, e.z, 2), signal);
          await bot.activateEntity(entity);
          return { ok: true, result: { used: entityName(entity), entity: entity.id } };
        }
        const block = bot.blockAt(new Vec3(action.x, action.y, action.z));
        if (block === null || !block.name.includes(action.target)) {
          return {
            ok: false,
            error: `no ${action.target} at ${action.x} ${action.y} ${action.z} (${block?.name ?? 'unloaded'})`,
          };
        }
        await goto(new pf.goals.GoalNear(action.x, action.y, action.z, 3), signal);
        await bot.activateBlock(block);
        return { ok: true, result: { used: block.name } };
      }
      case 'craft': {
        const item = bot.registry.itemsByName[action.recipe];
        if (item === undefined) return { ok: false, error: `unknown item ${action.recipe}` };
        const table = bot.findBlock({ matching: blockId('crafting_table'), maxDistance: radius });
        const recipe = bot.recipesFor(item.id, null, 1, table)[0];
        if (recipe === undefined) {
          return {
            ok: false,
            error: `cannot craft ${action.recipe} with this inventory${table ? '' : ' and no crafting table near'}`,
          };
        }
        if (table !== null)
          await goto(new pf.goals.GoalNear(table.position.x, table.position.y, table.position.z, 2), signal);
        await bot.craft(recipe, action.quantity ?? 1, table ?? undefined);
        return { ok: true, result: { crafted: action.recipe, times: action.quantity ?? 1 } };
      }
      case 'smelt': {
        const furnaceBlock = bot.findBlock({ matching: blockId('furnace'), maxDistance: radius });
        if (furnaceBlock === null) return { ok: false, error: `no furnace within ${radius} blocks` };
        const input = bot.registry.itemsByName[action.item];
        if (input === undefined) return { ok: false, error: `unknown item ${action.item}` };
        const fuel = bot.inventory.items().find((i) => ['coal', 'charcoal', 'oak_planks'].includes(i.name));
        if (fuel === undefined)
          return { ok: false, error: 'no fuel (coal, charcoal or planks) in the inventory' };
        const fb = furnaceBlock.position;
        await goto(new pf.goals.GoalNear(fb.x, fb.y, fb.z, 2), signal);
        const furnace = await bot.openFurnace(furnaceBlock);
        try {
          await furnace.putFuel(fuel.type, null, Math.min(fuel.count, Math.ceil(action.quantity / 8)));
          await furnace.putInput(input.id, null, action.quantity);
          let got = 0;
          while (got < action.quantity) {
            if (signal.aborted) throw new Error('stopped');
            await new Promise((r) => setTimeout(r, 1_000));
            if (furnace.outputItem() !== null) got += (await furnace.takeOutput())?.count ?? 0;
          }
          return { ok: true, result: { smelted: action.item, count: got } };
        } finally {
          furnace.close();
        }
      }
    }
  };

  let last = 0;
  let pending: ReturnType<typeof setTimeout> | null = null;
  const listeners: Array<() => void> = [];
  const changed = (): void => {
    if (pending !== null) return;
    const wait = Math.max(0, last + 200 - Date.now());
    pending = setTimeout(() => {
      pending = null;
      last = Date.now();
      for (const fn of listeners) fn();
    }, wait);
  };
  bot.on('move', changed);
  bot.on('health', changed);
  bot.inventory.on('updateSlot', changed);

  const runner: ActionRunner = {
    run: (action, signal) =>
      run(action, signal).catch((e: unknown) => ({
        ok: false as const,
        error: e instanceof Error ? e.message : String(e),
      })),
    state: (): PlayerState | null => {
      if (bot.entity === undefined) return null;
      const p = bot.entity.position;
      return {
        position: { x: p.x, y: p.y, z: p.z },
        health: finite(bot.health),
        hunger: finite(bot.food),
        saturation: finite(bot.foodSaturation),
        inventory: bot.inventory.items().map((i) => ({ slot: i.slot, item: i.name, count: i.count })),
        dimension: String(bot.game?.dimension ?? 'unknown'),
        gameMode: String(bot.game?.gameMode ?? 'unknown'),
      };
    },
  };
  return {
    bot,
    runner,
    onStateChange: (fn) => listeners.push(fn),
    quit: () => {
      if (pending !== null) clearTimeout(pending);
      bot.quit();
    },
  };
}
