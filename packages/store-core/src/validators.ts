/**
 * Checks of the input to the stores' own methods (clients, tools, task pages), shared so SQLite and PostgreSQL refuse
 * the same input with the same `StoreError('invalid_input')`. Each throws before anything is written.
 */
import { StoreError } from './store-error.js';
import { MODEL_TOOL_STATUSES, type ClientUpsert, type ModelToolInfo, type TaskPageQuery } from './types.js';

/** Page size of a task page when the query names none. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page size of a task page. */
export const MAX_PAGE_SIZE = 1000;

/** A non-empty string id, else `invalid_input`. */
export function requireId(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new StoreError('invalid_input', `${field} must be a non-empty string`, { details: { field } });
  }
}

/** A finite epoch-ms time, else `invalid_input`. */
export function requireTime(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new StoreError('invalid_input', `${field} must be a finite number (epoch ms)`, {
      details: { field },
    });
  }
}

/** A client's sighting: an id, command descriptors with names, a time; else `invalid_input`. */
export function validateClientUpsert(c: ClientUpsert): void {
  requireId(c.clientId, 'clientId');
  if (!Array.isArray(c.commands) || !c.commands.every((d) => d && typeof d.name === 'string' && d.name)) {
    throw new StoreError('invalid_input', 'commands must be an array of { name, … } descriptors', {
      details: { clientId: c.clientId },
    });
  }
  requireTime(c.seenAt, 'seenAt');
  if (c.connectedWith !== undefined) requireId(c.connectedWith, 'connectedWith');
}

/** A client's model-written tools as reported: unique non-empty names, known statuses, integer versions ≥ 0. */
export function validateTools(clientId: string, tools: ModelToolInfo[], at: number): void {
  requireId(clientId, 'clientId');
  requireTime(at, 'at');
  if (!Array.isArray(tools)) throw new StoreError('invalid_input', 'tools must be an array');
  const seen = new Set<string>();
  for (const t of tools) {
    if (typeof t?.name !== 'string' || t.name.length === 0) {
      throw new StoreError('invalid_input', 'every tool needs a non-empty name', { details: { clientId } });
    }
    if (seen.has(t.name)) {
      throw new StoreError('invalid_input', `tool "${t.name}" is listed twice`, { details: { clientId } });
    }
    seen.add(t.name);
    if (!MODEL_TOOL_STATUSES.includes(t.status)) {
      throw new StoreError(
        'invalid_input',
        `tool "${t.name}" has status "${String(t.status)}"; expected one of ${MODEL_TOOL_STATUSES.join(', ')}`,
        { details: { clientId, tool: t.name } },
      );
    }
    if (!Number.isInteger(t.version) || t.version < 0) {
      throw new StoreError('invalid_input', `tool "${t.name}" needs an integer version >= 0`, {
        details: { clientId, tool: t.name },
      });
    }
  }
}

/** The refusal of a client method naming a client never upserted. */
export function clientNotFound(clientId: string): StoreError {
  return new StoreError('client_not_found', `no client ${clientId} has been seen`, { details: { clientId } });
}

/** A task page query's size and offset (defaults filled in); `invalid_input` for a bad size, offset or order. */
export function pageOf(q: TaskPageQuery): { limit: number; offset: number } {
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const offset = q.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new StoreError('invalid_input', `limit must be an integer in 1..${MAX_PAGE_SIZE}`, {
      details: { limit },
    });
  }
  if (!Number.isInteger(offset) || offset < 0) {
    throw new StoreError('invalid_input', 'offset must be an integer >= 0', { details: { offset } });
  }
  if (q.order !== undefined && q.order !== 'newest' && q.order !== 'oldest') {
    throw new StoreError('invalid_input', "order must be 'newest' or 'oldest'", {
      details: { order: q.order },
    });
  }
  return { limit, offset };
}
