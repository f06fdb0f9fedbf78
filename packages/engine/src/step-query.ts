import { EngineError } from './engine-error.js';
import type { StepQuery } from './types.js';

/** A checked {@link StepQuery}: `limit` undefined means no limit. */
export interface NormalizedStepQuery {
  afterSeq: number;
  limit: number | undefined;
}

/**
 * Check a {@link StepQuery} and fill in its defaults (`afterSeq` 0, no limit). Throws `EngineError('invalid_input')`
 * naming the field when `afterSeq` or `limit` is not an integer ≥ 0. Every `TaskStore` implementation uses it, so
 * they accept and refuse exactly the same queries.
 */
export function normalizeStepQuery(query: StepQuery | undefined): NormalizedStepQuery {
  const afterSeq = query?.afterSeq ?? 0;
  const limit = query?.limit;
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw new EngineError('invalid_input', 'afterSeq must be an integer >= 0', {
      details: { field: 'afterSeq', value: String(afterSeq) },
    });
  }
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new EngineError('invalid_input', 'limit must be an integer >= 0', {
      details: { field: 'limit', value: String(limit) },
    });
  }
  return { afterSeq, limit };
}
