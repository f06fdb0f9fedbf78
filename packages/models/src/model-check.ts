/**
 * Which configured models a server has: the shape `checkModels` returns, so the orchestrator can report missing
 * models at startup and on `/health`.
 */
import type { ModelError } from './model-error.js';
import { normalizeModelName } from './model-names.js';

/** What a server reported about the requested models. Names in `present`/`missing` are as requested. */
export interface ModelCheckReport {
  provider: string;
  host: string;
  /** Server version (`/api/version`), when the server reports one. */
  version?: string;
  present: string[];
  missing: string[];
  /** Every model the server lists, as it names them. */
  available: string[];
}

/** `checkModels` result: the report, or why the server could not be asked (unreachable, bad answer, …). */
export type ModelCheckResult = { ok: true; value: ModelCheckReport } | { ok: false; error: ModelError };

/** Options of `checkModels`. */
export interface CheckModelsOptions {
  signal?: AbortSignal;
  /** Deadline for the whole check including retries (default: the model's `timeoutMs`). */
  timeoutMs?: number;
}

/** A `ChatModel` adapter that can tell which models its server has. */
export interface ModelInventory {
  checkModels(names: readonly string[], options?: CheckModelsOptions): Promise<ModelCheckResult>;
}

/** Splits `requested` into present and missing against `available`, comparing normalised names. */
export function partitionModels(
  requested: readonly string[],
  available: readonly string[],
): { present: string[]; missing: string[] } {
  const have = new Set(available.map(normalizeModelName));
  const present: string[] = [];
  const missing: string[] = [];
  for (const name of requested) (have.has(normalizeModelName(name)) ? present : missing).push(name);
  return { present, missing };
}
