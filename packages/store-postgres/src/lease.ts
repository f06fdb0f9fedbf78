import type { Logger } from '@ccagent/engine';
import { StoreError } from '@ccagent/store-core';
import pg from 'pg';
import { toStoreError } from './errors.js';
import { redactUrl, type WriteFence } from './postgres-store.js';

/** Options of {@link LeaderLease.open}. */
export interface LeaderLeaseOptions {
  /** The database the orchestrators share (the store's URL). */
  url: string;
  /** Lease name: orchestrators with the same name on one database elect one leader (default `orchestrator`). */
  name?: string;
  /** Who this process is (host:pid or a configured id), shown to standbys and in `/health`. */
  holder: string;
  /** Where this process serves clients once it leads (standbys redirect there). */
  serveUrl?: string;
  /**
   * How long a lease lasts without renewal (ms, default 5000): the longest a standby waits after the leader stopped
   * renewing without its connection closing (a paused process, a network cut). A leader whose process died is taken
   * over sooner: its lease connection is gone from `pg_stat_activity`.
   */
  ttlMs?: number;
  /** How often the leader renews (ms, default ttl / 4). */
  renewEveryMs?: number;
  /** How often a standby tries to take the lease (ms, default 250). */
  pollEveryMs?: number;
  logger?: Logger;
}

/** Who holds a lease, as the database says. */
export interface LeaseHolder {
  holder: string;
  token: number;
  url: string | null;
  /** Milliseconds until it expires without renewal (negative: expired). */
  expiresInMs: number;
}

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * The leader lease of orchestrators sharing one PostgreSQL database: a row of `leases` with a holder, an expiry (the
 * database's clock) and a fencing token that grows by one with every new holder. Exactly one process holds it; it
 * renews it on its own connection, and a store fenced with it ({@link PostgresStore.fenceWith}) refuses to write once
 * the row carries another token. A standby takes the lease when it expired or when the holder's lease connection is
 * gone from `pg_stat_activity` (a killed process: its sockets close at once), so a kill -9 is taken over within about
 * one poll interval, and a paused or cut-off leader within the ttl.
 */
export class LeaderLease implements WriteFence {
  readonly name: string;
  private held: number | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private lastRenewedAt = 0;
  private lostListeners: Array<(reason: string) => void> = [];
  private closed = false;
  private queue: Promise<void> = Promise.resolve();

  private constructor(
    private client: pg.Client,
    private readonly opts: Required<Omit<LeaderLeaseOptions, 'serveUrl' | 'logger'>> & {
      serveUrl: string | null;
      logger: Logger;
    },
  ) {
    this.name = opts.name;
  }

  /** Connect the lease's own connection (its backend pid is how standbys see this process alive). */
  static async open(o: LeaderLeaseOptions): Promise<LeaderLease> {
    const ttlMs = o.ttlMs ?? 5000;
    const opts = {
      url: o.url,
      name: o.name ?? 'orchestrator',
      holder: o.holder,
      serveUrl: o.serveUrl ?? null,
      ttlMs,
      renewEveryMs: o.renewEveryMs ?? Math.max(50, Math.floor(ttlMs / 4)),
      pollEveryMs: o.pollEveryMs ?? 250,
      logger: o.logger ?? silentLogger,
    };
    return new LeaderLease(await LeaderLease.connect(opts.url, opts.logger), opts);
  }

  private static async connect(url: string, logger: Logger): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: url,
      application_name: 'ccagent-lease',
      connectionTimeoutMillis: 5000,
    });
    c.on('error', (err) => logger.warn({ err }, 'lease: connection lost'));
    try {
      await c.connect();
    } catch (cause) {
      throw new StoreError(
        'open_failed',
        `cannot connect to ${redactUrl(url)}: ${(cause as Error).message}`,
        { cause },
      );
    }
    return c;
  }

  /** The fencing token this process holds, or undefined. */
  get token(): number | undefined {
    return this.held;
  }

  /** Called once if the lease is lost after it was held (another process took it, or it could not be renewed). */
  onLost(listener: (reason: string) => void): void {
    this.lostListeners.push(listener);
  }

  /** Take the lease if it is free, expired or its holder is gone; resolves with the token or undefined. */
  async tryAcquire(): Promise<number | undefined> {
    const r = await this.query<{ token: number }>(
      `INSERT INTO "leases" ("name", "holder", "token", "holder_pid", "url", "acquired_at", "expires_at")
       VALUES ($1, $2, 1, pg_backend_pid(), $3, clock_timestamp(), clock_timestamp() + $4 * interval '1 millisecond')
       ON CONFLICT ("name") DO UPDATE SET "holder" = excluded."holder", "token" = "leases"."token" + 1,
         "holder_pid" = excluded."holder_pid", "url" = excluded."url", "acquired_at" = excluded."acquired_at",
         "expires_at" = excluded."expires_at"
       WHERE "leases"."expires_at" < clock_timestamp()
          OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a."pid" = "leases"."holder_pid")
       RETURNING "token"::float8 AS "token"`,
      [this.name, this.opts.holder, this.opts.serveUrl, this.opts.ttlMs],
    );
    const token = r.rows[0]?.token;
    if (token === undefined) return undefined;
    this.held = token;
    this.lastRenewedAt = performance.now();
    this.scheduleRenew();
    this.opts.logger.info({ lease: this.name, token, holder: this.opts.holder }, 'lease: acquired');
    return token;
  }

  /**
   * Wait until this process holds the lease (trying every `pollEveryMs`); resolves with the token. `onWaiting` is
   * told who holds it meanwhile (for `/health` and redirects). Rejects if `signal` aborts.
   */
  async acquire(
    signal?: AbortSignal,
    onWaiting?: (holder: LeaseHolder | undefined) => void,
  ): Promise<number> {
    for (;;) {
      signal?.throwIfAborted();
      try {
        const token = await this.tryAcquire();
        if (token !== undefined) return token;
        onWaiting?.(await this.holder());
      } catch (err) {
        this.opts.logger.warn({ err }, 'lease: cannot reach the database; retrying');
        await this.reconnect().catch(() => undefined);
      }
      await new Promise<void>((resolve) => {
        const onAbort = (): void => {
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, this.opts.pollEveryMs);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  /** Who holds the lease now, per the database (undefined: nobody ever did). */
  async holder(): Promise<LeaseHolder | undefined> {
    const r = await this.query<LeaseHolder>(
      `SELECT "holder", "token"::float8 AS "token", "url",
              (extract(epoch FROM ("expires_at" - clock_timestamp())) * 1000)::float8 AS "expiresInMs"
       FROM "leases" WHERE "name" = $1`,
      [this.name],
    );
    return r.rows[0];
  }

  /** Give the lease up (a clean shutdown: a standby takes over at its next poll) and close the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.renewTimer);
    const token = this.held;
    this.held = undefined;
    if (token !== undefined) {
      await this.query(
        `UPDATE "leases" SET "expires_at" = clock_timestamp() - interval '1 second' WHERE "name" = $1 AND "token" = $2`,
        [this.name, token],
      ).catch(() => undefined);
    }
    await this.client.end().catch(() => undefined);
  }

  private scheduleRenew(): void {
    clearTimeout(this.renewTimer);
    if (this.closed || this.held === undefined) return;
    this.renewTimer = setTimeout(() => void this.renew(), this.opts.renewEveryMs);
    this.renewTimer.unref?.();
  }

  private async renew(): Promise<void> {
    const token = this.held;
    if (token === undefined || this.closed) return;
    const startedAt = performance.now();
    try {
      const r = await this.query(
        `UPDATE "leases" SET "expires_at" = clock_timestamp() + $3 * interval '1 millisecond', "holder_pid" = pg_backend_pid()
         WHERE "name" = $1 AND "token" = $2`,
        [this.name, token, this.opts.ttlMs],
      );
      if (r.rowCount === 0) return this.lose(`another orchestrator took the lease "${this.name}"`);
      this.lastRenewedAt = startedAt;
    } catch (err) {
      this.opts.logger.warn({ err: toStoreError(err) }, 'lease: renewal failed');
      await this.reconnect().catch(() => undefined);
    }
    // Not renewed for a whole ttl: a standby may hold it by now. Stop believing we lead (the fence stops the writes).
    if (performance.now() - this.lastRenewedAt >= this.opts.ttlMs) {
      return this.lose(`the lease "${this.name}" could not be renewed for ${this.opts.ttlMs} ms`);
    }
    this.scheduleRenew();
  }

  private lose(reason: string): void {
    if (this.held === undefined) return;
    this.held = undefined;
    clearTimeout(this.renewTimer);
    this.opts.logger.error({ lease: this.name }, `lease: lost: ${reason}`);
    for (const l of this.lostListeners) l(reason);
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    const old = this.client;
    await old.end().catch(() => undefined);
    this.client = await LeaderLease.connect(this.opts.url, this.opts.logger);
  }

  /** One query at a time on the lease connection (a renewal may fire while a standby's poll runs). */
  private query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const run = this.queue.then(() => this.client.query<R>(text, values));
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}
