/**
 * The store's health for `/health`: whether the connection answers, whether writes wait for another process's lock,
 * and the verdict of the last write batch (a storage failure — disk full, locked, I/O — makes the store unhealthy
 * until a write succeeds; while nothing else writes, a probe write notices the condition clearing).
 */
import type { Logger } from '@ccagent/engine';
import { APPLICATION_ID } from '../migrate.js';
import { type StorageFailureCode, storageFailureOf, type StoreHealth } from '@ccagent/store-core';
import { storageFailureCode, storageFailureMessage } from './failures.js';
import type { BatchOutcome } from '../write-queue.js';
import { errorMessage, type SqliteConnection } from './connection.js';

/** Deadline of the write probe `/health` runs while writes are failing (ms). */
const PROBE_LOCK_TIMEOUT_MS = 250;
const RERUNNABLE_PROBE = { rerunnable: true, lockTimeoutMs: PROBE_LOCK_TIMEOUT_MS } as const;

/** See the module comment. Built before the connection, which reports every batch's verdict to it. */
export class WriteHealth {
  /** Outcome of the last write batch that reached a verdict: storage failures make `/health` say so. */
  private writeState: { ok: true } | { ok: false; code: StorageFailureCode; error: string; since: number } = {
    ok: true,
  };
  private probing: Promise<void> | undefined;

  constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Cheap health check for `/health`, no write: the connection is open, the schema answers a query, writes are not
   * waiting for another process's lock, and the last write batch did not fail for a storage reason (disk full,
   * locked, I/O). It turns healthy again as soon as a write succeeds ({@link probeHealth} tries one).
   */
  checkHealth(c: SqliteConnection): StoreHealth {
    if (c.closed) return { ok: false, error: 'store is closed', code: 'closed' };
    try {
      c.db.prepare('SELECT count(*) FROM (SELECT 1 FROM tasks LIMIT 1)').get();
    } catch (err) {
      const code = storageFailureCode(err);
      return {
        ok: false,
        error: code ? storageFailureMessage(code, err) : errorMessage(err),
        code: code ?? 'sqlite_error',
      };
    }
    const waitSince = c.writes.lockWaitSince;
    if (waitSince !== undefined) {
      return {
        ok: false,
        code: 'locked',
        error: storageFailureMessage('locked', undefined, performance.now() - waitSince),
      };
    }
    const w = this.writeState;
    if (!w.ok) return { ok: false, error: w.error, code: w.code };
    return { ok: true };
  }

  /**
   * {@link checkHealth}, but while writes are failing and none is queued, first try one small real write (bounded
   * to a fraction of a second, never blocking the event loop) so that a cleared condition is noticed even when
   * nothing else writes.
   */
  async probeHealth(c: SqliteConnection): Promise<StoreHealth> {
    if (!c.closed && !c.readonly && !this.writeState.ok && c.writes.size === 0) {
      this.probing ??= c.writes
        .enqueue(() => {
          // Re-stamps the same application id: a real page write (WAL frame + commit), changing nothing.
          c.db.pragma(`application_id = ${APPLICATION_ID}`);
        }, RERUNNABLE_PROBE)
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => (this.probing = undefined));
      await this.probing;
    }
    return this.checkHealth(c);
  }

  /** The verdict of a write batch. */
  noteOutcome(o: BatchOutcome): void {
    if (o.ok === false && o.busy) return; // live in checkHealth while the wait lasts; the verdict comes later
    const errors = o.ok ? o.writeErrors : [o.error];
    for (const err of errors) {
      const failure = storageFailureOf(err) ?? driverFailure(err);
      if (failure === undefined) continue; // a logic error (conflict, unknown task…), not the storage's fault
      if (this.writeState.ok || this.writeState.code !== failure.code) {
        this.logger.error(
          { path: this.path, code: failure.code, err },
          `store: writes fail: ${failure.message}`,
        );
      }
      this.writeState = { ok: false, code: failure.code, error: failure.message, since: Date.now() };
      return;
    }
    if (o.ok) {
      if (!this.writeState.ok) this.logger.info({ path: this.path }, 'store: writes succeed again');
      this.writeState = { ok: true };
    }
  }
}

/** A storage condition straight from the SQLite driver (an error the write queue reports unmapped). */
function driverFailure(err: unknown): { code: StorageFailureCode; message: string } | undefined {
  const code = storageFailureCode(err);
  return code === undefined ? undefined : { code, message: storageFailureMessage(code, err) };
}
