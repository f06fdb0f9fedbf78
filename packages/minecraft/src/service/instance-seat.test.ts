import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isMinecraftError } from '../minecraft-error.js';
import { fileSettingsStore, InstanceSeat, type McSettingsStore } from './instance-seat.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempFile(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'ccagent-seat-'));
  dirs.push(d);
  return path.join(d, 'db.sqlite.minecraft.json');
}

/** A store whose saves wait for `release()` and can be made to fail: an honest slow or failing database. */
class HeldStore implements McSettingsStore {
  saved: unknown[] = [];
  fail: Error | null = null;
  private waiting: Array<() => void> = [];
  constructor(private doc: unknown = null) {}
  load(): Promise<unknown> {
    return Promise.resolve(this.doc);
  }
  save(doc: unknown): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push(() => {
        if (this.fail !== null) return reject(this.fail);
        this.doc = doc;
        this.saved.push(doc);
        resolve();
      });
    });
  }
  release(): void {
    for (const w of this.waiting.splice(0)) w();
  }
  get held(): number {
    return this.waiting.length;
  }
}

describe('the instance seat (active instance and action lists)', () => {
  it('keeps both in a file a new seat reads back, and starts empty without one', async () => {
    const file = tempFile();
    const first = new InstanceSeat(fileSettingsStore(file));
    await first.load();
    expect([first.active(), first.policy('Bot')]).toEqual([null, undefined]);
    await first.setActive('Bot');
    await first.setPolicy('Bot', { deny: ['chat'] });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      active: 'Bot',
      actions: { Bot: { deny: ['chat'] } },
    });
    const again = new InstanceSeat(fileSettingsStore(file));
    await again.load();
    expect([again.active(), again.policy('Bot')]).toEqual(['Bot', { deny: ['chat'] }]);
  });

  it('shows a change only once its save resolved, saves changes one at a time in order, and loses none of two made at once', async () => {
    const store = new HeldStore({ active: 'Alex', actions: {} });
    const seat = new InstanceSeat(store);
    await seat.load();
    const a = seat.setPolicy('Alex', { deny: ['chat'] });
    const b = seat.setPolicy('Bot', { allow: ['goto'] });
    await new Promise((r) => setTimeout(r, 10));
    // Not acknowledged, not seen: the first save is held, the second has not started.
    expect(seat.policy('Alex')).toBeUndefined();
    expect(store.held).toBe(1);
    store.release();
    await a;
    expect(seat.policy('Alex')).toEqual({ deny: ['chat'] });
    await new Promise((r) => setTimeout(r, 10));
    store.release();
    await b;
    expect(store.saved.at(-1)).toEqual({
      active: 'Alex',
      actions: { Alex: { deny: ['chat'] }, Bot: { allow: ['goto'] } },
    });
  });

  it('a save that fails rejects and changes nothing; the next change is saved from the settings as they were', async () => {
    const store = new HeldStore();
    const seat = new InstanceSeat(store);
    await seat.load();
    store.fail = new Error('database down');
    const failed = seat.setActive('Bot');
    await new Promise((r) => setTimeout(r, 10));
    store.release();
    await expect(failed).rejects.toThrow('database down');
    expect(seat.active()).toBeNull();
    store.fail = null;
    const ok = seat.setPolicy('Bot', { deny: ['mine'] });
    await new Promise((r) => setTimeout(r, 10));
    store.release();
    await ok;
    expect(store.saved).toEqual([{ active: null, actions: { Bot: { deny: ['mine'] } } }]);
  });

  it('a stored document that is not a settings document is refused with settings_invalid, naming the field', async () => {
    const file = tempFile();
    writeFileSync(file, JSON.stringify({ active: 'Bot', actions: { Bot: { deny: ['fly'] } } }));
    const err = await new InstanceSeat(fileSettingsStore(file)).load().catch((e: unknown) => e);
    expect(isMinecraftError(err, 'settings_invalid')).toBe(true);
    expect((err as Error).message).toMatch(/actions\.Bot\.deny\.0/);
  });
});
