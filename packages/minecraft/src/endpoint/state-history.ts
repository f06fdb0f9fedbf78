/**
 * An instance's state history as the latest state plus changes: each `state_update` that changed something is kept
 * as the top-level fields it changed (a position, the inventory, health), not as a whole copy.
 */
import type { PlayerState } from '../protocol/messages.js';

/** One state update that changed something: when, and the fields with their new values. */
export interface StateChange {
  at: number;
  changed: Partial<PlayerState>;
}

/** The fields of `next` that differ from `prev` (all of them for the first state), or null when none does. */
export function stateChanges(prev: PlayerState | null, next: PlayerState): Partial<PlayerState> | null {
  if (prev === null) return { ...next };
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(next) as Array<keyof PlayerState>) {
    if (JSON.stringify(prev[key]) !== JSON.stringify(next[key])) out[key] = next[key];
  }
  return Object.keys(out).length === 0 ? null : (out as Partial<PlayerState>);
}
