import { describe, expect, it } from 'vitest';
import { Abort } from './abort.js';

describe('Abort (the engine-internal step/call abort)', () => {
  it('a signal asked for after the abort is already aborted with the same reason (guards against a lazily created signal missing the abort)', () => {
    const a = new Abort();
    const reason = new Error('stop');
    a.abort(reason);
    expect(a.aborted).toBe(true);
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe(reason);
  });

  it('a signal asked for before the abort fires before the race rejects (guards against the executor or model call hearing the abort after the engine moved on)', async () => {
    const a = new Abort();
    const order: string[] = [];
    a.signal.addEventListener('abort', () => order.push('signal'));
    const raced = a.race(new Promise<never>(() => {})).catch((e: unknown) => {
      order.push('race');
      throw e;
    });
    const reason = new Error('cancelled');
    a.abort(reason);
    await expect(raced).rejects.toBe(reason);
    expect(order).toEqual(['signal', 'race']);
  });

  it('a race settles with the raced promise when no abort comes, and a later abort changes nothing (guards against a finished step being rejected)', async () => {
    const a = new Abort();
    await expect(a.race(Promise.resolve(42))).resolves.toBe(42);
    await expect(a.race(Promise.reject(new Error('strategy failed')))).rejects.toThrow('strategy failed');
    a.abort(new Error('late'));
    expect(a.aborted).toBe(true);
  });

  it('a race started after the abort rejects at once and swallows the raced rejection (guards against an unhandled rejection from a dropped promise)', async () => {
    const a = new Abort();
    const reason = new Error('first');
    a.abort(reason);
    a.abort(new Error('second'));
    expect(a.reason).toBe(reason);
    let rejectLate!: (e: Error) => void;
    const late = new Promise<number>((_r, reject) => (rejectLate = reject));
    await expect(a.race(late)).rejects.toBe(reason);
    rejectLate(new Error('ignored'));
    await Promise.resolve();
  });

  it('never creates a signal nobody asked for (the point of the class: no AbortSignal per step that decides from memory)', () => {
    const a = new Abort();
    a.abort(new Error('x'));
    expect((a as unknown as { controller: unknown }).controller).toBeUndefined();
  });

  it('settle ends the race and marks it ended without aborting the signal, before or after it is asked for (guards against a recorded call aborting its executor signal, or a later abort firing it)', async () => {
    const a = new Abort();
    let heard = 0;
    a.signal.addEventListener('abort', () => heard++);
    const raced = a.race(new Promise<never>(() => {}));
    const reason = new Error('closed');
    a.settle(reason);
    await expect(raced).rejects.toBe(reason);
    expect(a.aborted).toBe(true);
    expect(a.signal.aborted).toBe(false);
    a.abort(new Error('later'));
    expect(a.signal.aborted).toBe(false);
    expect(heard).toBe(0);
    const b = new Abort();
    b.settle(reason);
    expect(b.signal.aborted).toBe(false);
    await expect(b.race(Promise.resolve(1))).rejects.toBe(reason);
  });
});
