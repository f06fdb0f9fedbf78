/**
 * Task kinds defined at run time (by an operator, over HTTP or the dashboard), kept as an append-only list of
 * revisions: each save of a kind is a new revision with the definition (opaque JSON: the application validates it;
 * `null` removes the stored kind, so the configuration file's definition, if any, applies again), who saved it and
 * when. The kinds in effect at a time are, per name, its latest revision saved at or before that time — so a task
 * keeps the definition that was in effect when it was created, also after a restart.
 */
import type { JsonValue } from './types.js';

/** One saved revision of a task kind. */
export interface TaskKindRevision {
  /** The kind's name (lower_snake_case; the application checks it). */
  name: string;
  /** 1 for the kind's first save, then 2, 3 …: (name, revision) is unique. */
  revision: number;
  /** The kind's definition as the application validated it; `null`: the stored kind was removed. */
  definition: JsonValue | null;
  /** When it was saved (ms since the epoch). */
  savedAt: number;
  /** Who saved it (an actor name from the audit log). */
  savedBy?: string;
}

/** Where run-time task kinds live (in memory here; SQLite in `@ccagent/store`, PostgreSQL in `@ccagent/store-postgres`). */
export interface TaskKindStore {
  /**
   * Appends a revision, durable when the promise resolves. Refused with `EngineError('conflict')` when the kind
   * already has a revision with that number (another writer saved first), and nothing is written.
   */
  appendTaskKindRevision(revision: TaskKindRevision): Promise<void>;
  /** Every revision, ordered by name, then revision. */
  listTaskKindRevisions(): Promise<TaskKindRevision[]>;
}

/** The latest revision of each kind saved at or before `at` (every revision when `at` is undefined), by name. */
export function taskKindsAt(
  revisions: readonly TaskKindRevision[],
  at?: number,
): Map<string, TaskKindRevision> {
  const out = new Map<string, TaskKindRevision>();
  for (const r of revisions) {
    if (at !== undefined && r.savedAt > at) continue;
    const seen = out.get(r.name);
    if (seen === undefined || seen.revision < r.revision) out.set(r.name, r);
  }
  return out;
}
