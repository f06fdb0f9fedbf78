/**
 * A small seeded PRNG (mulberry32) so a failing random run can be replayed: every suite prints its seed, and
 * `RESILIENCE_SEED=<n>` replays it.
 */

/** A seeded generator of floats in [0, 1) with integer and pick helpers. */
export interface Rng {
  readonly seed: number;
  next(): number;
  /** Integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

/** The seed from `RESILIENCE_SEED`, or a fresh random one. */
export function seedFromEnv(): number {
  const s = Number(process.env.RESILIENCE_SEED);
  return Number.isInteger(s) && s > 0 ? s : Math.floor(Math.random() * 2 ** 31) + 1;
}

/** mulberry32 from `seed`. */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
  };
}
