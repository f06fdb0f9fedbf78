/**
 * `serve --db postgres://…`: the orchestrator on PostgreSQL, where any number of processes may point at one database
 * and exactly one is active. Each takes the leader lease (`LeaderLease` of `@ccagent/store-postgres`) or waits for it
 * as a standby (see `standby.ts`); the one that gets it fences its store with the lease (a write after another
 * process took over is refused) and starts the full orchestrator on its address, which resumes every unfinished task
 * from the database. Losing the lease later (another process took it, or it could not be renewed) is reported to
 * `onLost`: the process must stop at once (its writes are already refused) and come back as a standby.
 */
import { hostname } from 'node:os';
import { LeaderLease, openPostgresStore, type PostgresStore } from '@ccagent/store-postgres';
import { OrchestratorError } from './orchestrator-error.js';
import { startOrchestrator, type OrchestratorOptions, type RunningOrchestrator } from './orchestrator.js';
import { startStandby } from './standby.js';

/** Options of {@link startOnPostgres}. */
export interface PostgresServeOptions extends Omit<OrchestratorOptions, 'store' | 'durableStore' | 'dbPath'> {
  /** The shared database. */
  dbUrl: string;
  /** Who this process is in the lease and `/health` (default `host:pid`). */
  holder?: string;
  /** The URL standbys send clients to (default `http://HOST:PORT` of this process). */
  advertiseUrl?: string;
  /** Lease ttl (ms, default 5000): how long a paused or cut-off leader keeps it. */
  leaseTtlMs?: number;
  /** This process serves as a standby at `url` (not called when it gets the lease at once). */
  onStandby?: (url: string) => void;
  /** This process lost the lease after it was active: stop at once (writes are refused from now on). */
  onLost: (reason: string) => void;
}

/** A process of a PostgreSQL deployment, standby or active. */
export interface PostgresServe {
  /** Resolves once this process is active, with the running orchestrator. */
  active: Promise<RunningOrchestrator>;
  /** Stop (a standby stops waiting; an active one shuts down and gives the lease up). */
  close(): Promise<void>;
}

/** Open the database and the lease, then serve as standby until active (see the module comment). */
export async function startOnPostgres(o: PostgresServeOptions): Promise<PostgresServe> {
  const { logger } = o;
  let store: PostgresStore;
  try {
    store = await openPostgresStore({ url: o.dbUrl, logger });
  } catch (cause) {
    throw new OrchestratorError('store_failed', `cannot open the database: ${(cause as Error).message}`, {
      cause,
    });
  }
  const holder = o.holder ?? `${hostname()}:${process.pid}`;
  const hostText = o.host.includes(':') ? `[${o.host}]` : o.host;
  let lease: LeaderLease;
  try {
    lease = await LeaderLease.open({
      url: o.dbUrl,
      holder,
      serveUrl: o.advertiseUrl ?? `http://${hostText}:${o.port}`,
      ...(o.leaseTtlMs !== undefined ? { ttlMs: o.leaseTtlMs } : {}),
      logger,
    });
  } catch (cause) {
    await store.close();
    throw new OrchestratorError('store_failed', `cannot open the leader lease: ${(cause as Error).message}`, {
      cause,
    });
  }
  const stopWaiting = new AbortController();
  let running: RunningOrchestrator | undefined;
  let lost = false;
  lease.onLost((reason) => {
    lost = true;
    o.onLost(reason);
  });

  const becomeActive = async (): Promise<RunningOrchestrator> => {
    let token = await lease.tryAcquire();
    if (token === undefined) {
      const standby = await startStandby({
        host: o.host,
        port: o.port,
        holder,
        dbLabel: store.path,
        logger,
        now: () => (o.clock ?? { now: Date.now }).now(),
      });
      standby.setActive(await lease.holder().catch(() => undefined));
      o.onStandby?.(standby.url);
      try {
        token = await lease.acquire(stopWaiting.signal, (h) => standby.setActive(h));
      } finally {
        await standby.close();
      }
    }
    logger.info({ holder, token }, 'lease: this orchestrator is active');
    store.fenceWith(lease);
    running = await startOrchestrator({
      ...o,
      dbPath: store.path,
      durableStore: store,
      role: () => ({ role: 'active', holder, lease_token: lease.token ?? null }),
    });
    if (lost) throw new OrchestratorError('store_failed', 'the leader lease was lost while starting');
    return running;
  };
  const active = becomeActive();
  // A failure after the caller stopped waiting is theirs to see through `active`; never unhandled.
  active.catch(() => undefined);
  return {
    active,
    close: async () => {
      stopWaiting.abort();
      await active.catch(() => undefined);
      // The orchestrator closes the store; the lease goes last so a standby takes over only once writes stopped.
      if (running) await running.close();
      else await store.close();
      await lease.close();
    },
  };
}
