/**
 * The WAL checkpointer (see the comment below the imports). Size (over 500 lines): the worker's source is inline
 * (the reason is below) and lives beside the host side that drives it, so both halves of one protocol stay in one
 * file.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { Logger } from '@ccagent/engine';
import type Database from 'better-sqlite3';

/**
 * WAL checkpoints off the commit path: a `worker_threads` worker with its own better-sqlite3 connection to the same
 * file checkpoints the WAL, so the writer connection can run with `PRAGMA wal_autocheckpoint = 0` and no COMMIT ever
 * pays for a checkpoint (page copies and fsyncs) on the event loop.
 *
 * Why the worker source is an inline string (`eval: true`) rather than a file of its own: a worker needs a file path
 * Node can run, and neither of the other choices gives one everywhere — from `src/` (vitest) the file would be
 * TypeScript, and a separate tsup entry would need a second `dist` file that every bundler of the package must keep
 * next to the bundle. The inline source is plain CommonJS, runs the same from `src/` and from `dist/`, and loads
 * the driver by the absolute path this module resolves.
 */

/** Options of {@link startCheckpointer}. */
export interface CheckpointerOptions {
  /** The database file (it must exist and be in WAL mode: the writer opens and migrates it first). */
  path: string;
  /**
   * The writer connection. When given, the checkpointer sets its `wal_autocheckpoint` to 0 once the worker runs, and
   * restores the writer's own value (1000 pages when it was 0) on fallback and on {@link Checkpointer.stop}, so the
   * WAL is never left without a checkpointer.
   */
  writer?: Pick<Database.Database, 'pragma' | 'open'>;
  /** Receives the worker's warnings (WAL over the hard bound, checkpoint errors) and the fallback. */
  logger?: Logger;
  /** How often the worker looks at the nudge counter (ms, default 20). */
  intervalMs?: number;
  /** Checkpoint once about this many WAL pages (frames) were written since the last checkpoint (default 1000). */
  walPagesThreshold?: number;
  /** A smaller backlog is checkpointed this long after the last checkpoint (ms, default 1000). */
  maxDelayMs?: number;
  /**
   * A WAL with this many frames was never restarted by the writer (which happens only when the writer begins a
   * transaction while the WAL is fully checkpointed — rare under sustained writes): run a RESTART checkpoint, which
   * holds the write lock for the few frames PASSIVE left (default 4 × `walPagesThreshold`).
   */
  restartFrames?: number;
  /** Longest a RESTART checkpoint waits for the writer or readers (ms, default 20); busy is retried later. */
  restartWaitMs?: number;
  /**
   * WAL file size above which the checkpointer escalates to TRUNCATE checkpoints (waiting up to
   * `escalationWaitMs` for readers, backing off 1 s → 30 s while they hold on) and logs a warning once per episode
   * (bytes, default 64 MiB).
   */
  walHardLimitBytes?: number;
  /** Longest an escalated (TRUNCATE) checkpoint waits for the writer and readers (ms, default 100). */
  escalationWaitMs?: number;
  /** First pause between escalated checkpoints while the WAL stays over the bound (ms, default 1000; doubles to 30 s). */
  escalationBackoffMs?: number;
  /** Longest the final TRUNCATE checkpoint of {@link Checkpointer.stop} waits for the writer and readers (ms, default 1000). */
  stopWaitMs?: number;
  /** `synchronous` of the worker's connection (the writer's; default `full`). Checkpoints fsync at both levels. */
  synchronous?: 'full' | 'normal';
  /**
   * Called once when the worker cannot start or dies: the checkpointer is then off for good and (with `writer`) the
   * writer's auto-checkpoint is back on. Never called after {@link Checkpointer.stop}.
   */
  onFallback?: (reason: Error) => void;
}

/** Where a {@link Checkpointer} is: `fallback` means the writer checkpoints by itself again. */
export type CheckpointerState = 'starting' | 'running' | 'fallback' | 'stopped';

/** Counters of a {@link Checkpointer} (read from shared memory, always current). Durations in ms. */
export interface CheckpointerStats {
  state: CheckpointerState;
  /** Nudges received (commits reported by the writer). */
  nudges: number;
  /** Checkpoints run, of any mode. */
  checkpoints: number;
  /** WAL frames copied into the database file (about: frames a TRUNCATE copied are not counted). */
  framesCheckpointed: number;
  /** Checkpoints that found the WAL busy (another checkpoint, the writer, readers) and were retried later. */
  busy: number;
  /** RESTART checkpoints (the writer did not restart the WAL by itself). */
  restarts: number;
  /** TRUNCATE checkpoints because the WAL was over the hard bound. */
  escalations: number;
  /** Checkpoints that failed with an error other than busy. */
  errors: number;
  /** WAL frames at the last checkpoint. */
  walFrames: number;
  /** WAL file size at the last check (bytes). */
  walBytes: number;
  /** Duration of the last and of the longest checkpoint, and the sum of all. */
  lastCheckpointMs: number;
  maxCheckpointMs: number;
  totalCheckpointMs: number;
}

/** A running checkpointer; see {@link startCheckpointer}. */
export interface Checkpointer {
  /** Report a commit of the writer. Lock-free and allocation-free (one `Atomics.add`); call after every COMMIT. */
  nudge(): void;
  /** True once the worker runs, false when it fell back (or was stopped before it ran). */
  readonly ready: Promise<boolean>;
  /**
   * Final TRUNCATE checkpoint (PASSIVE when readers or a writer hold on past `stopWaitMs`), close the worker's
   * connection, end the worker, restore the writer's auto-checkpoint. Idempotent; never rejects.
   */
  stop(): Promise<void>;
  /** Current counters. */
  stats(): CheckpointerStats;
}

const DEFAULTS = {
  intervalMs: 20,
  walPagesThreshold: 1000,
  maxDelayMs: 1000,
  restartWaitMs: 20,
  walHardLimitBytes: 64 * 1024 * 1024,
  escalationWaitMs: 100,
  escalationBackoffMs: 1000,
  stopWaitMs: 1000,
};
/** Auto-checkpoint put back on a writer whose own value was 0 (SQLite's default). */
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;
/** A stop() whose worker has not ended this long after its final checkpoint could have is cut short. */
const STOP_GRACE_MS = 2000;

// Shared control words (Int32Array) and stats slots (Float64Array); the worker source uses the same indices.
const CTRL_STOP = 0;
const CTRL_NUDGES = 1;
const STAT_FIELDS = [
  'checkpoints',
  'framesCheckpointed',
  'busy',
  'restarts',
  'escalations',
  'errors',
  'walFrames',
  'walBytes',
  'lastCheckpointMs',
  'maxCheckpointMs',
  'totalCheckpointMs',
] as const;

/** Options the worker receives (plain data). */
interface WorkerOptions {
  path: string;
  synchronous: 'FULL' | 'NORMAL';
  intervalMs: number;
  walPagesThreshold: number;
  maxDelayMs: number;
  restartFrames: number;
  restartWaitMs: number;
  walHardLimitBytes: number;
  escalationWaitMs: number;
  escalationBackoffMs: number;
  stopWaitMs: number;
}

/** Messages from the worker. */
type WorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; message: string; code?: string }
  | { type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg: string }
  | { type: 'stopped'; walBytes: number; final: { busy: number; log: number; checkpointed: number } | null };

/*
 * The worker: a synchronous loop (it owns its thread) that sleeps on the stop word with Atomics.wait, so stop() wakes
 * it at once and the writer never has to signal anything but a counter. Every tick it estimates the WAL frames
 * written since the last checkpoint from the nudges and the frames-per-commit seen so far, and runs PASSIVE when the
 * estimate reaches the threshold (or maxDelayMs passed with anything written). The WAL itself is never read behind
 * SQLite's back: opening and closing a descriptor of the -shm file would drop this process's POSIX locks on it.
 */
const WORKER_SOURCE = String.raw`
'use strict';
const { workerData } = require('node:worker_threads');
const parentPort = workerData.port;
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const o = workerData.options;
const ctrl = new Int32Array(workerData.ctrl);
const st = new Float64Array(workerData.stats);
const S = { checkpoints: 0, frames: 1, busy: 2, restarts: 3, escalations: 4, errors: 5, walFrames: 6, walBytes: 7, lastMs: 8, maxMs: 9, totalMs: 10 };
const STOP = ${CTRL_STOP}, NUDGES = ${CTRL_NUDGES};
const MAX_CONSECUTIVE_ERRORS = 20;
const ERROR_PAUSE_MS = 1000;
const RESTART_BACKOFF_MS = 50;
const log = (level, obj, msg) => parentPort.postMessage({ type: 'log', level, obj, msg });

let db;
try {
  const Database = require(workerData.driver);
  db = new Database(o.path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  db.pragma('synchronous = ' + o.synchronous);
  const mode = db.pragma('journal_mode', { simple: true });
  if (mode !== 'wal') throw new Error('database is not in WAL mode (journal_mode = ' + mode + ')');
} catch (err) {
  try { if (db) db.close(); } catch {}
  parentPort.postMessage({ type: 'failed', message: String((err && err.message) || err), code: err && err.code });
  db = undefined;
}

const walPath = o.path + '-wal';
function walBytes() {
  try { return fs.statSync(walPath).size; } catch { return 0; }
}
function isBusy(err) {
  return err && typeof err.code === 'string' && (err.code.startsWith('SQLITE_BUSY') || err.code.startsWith('SQLITE_LOCKED'));
}

let consecutiveErrors = 0;
let errorPauseUntil = 0;
let seenLog = 0;
let seenCheckpointed = 0;
const reportedErrors = new Set();
/** One checkpoint: its { busy, log, checkpointed } row, or null when busy or failed (both retried later). */
function checkpoint(mode, waitMs) {
  const t0 = performance.now();
  try {
    if (waitMs > 0) db.pragma('busy_timeout = ' + waitMs);
    const r = db.pragma('wal_checkpoint(' + mode + ')')[0];
    const ms = performance.now() - t0;
    st[S.checkpoints]++;
    st[S.lastMs] = ms;
    st[S.totalMs] += ms;
    if (ms > st[S.maxMs]) st[S.maxMs] = ms;
    consecutiveErrors = 0;
    if (r.busy) st[S.busy]++;
    if (r.log >= 0) {
      // checkpointed counts from the start of the WAL generation: a smaller log means the writer restarted the WAL.
      st[S.frames] += r.log < seenLog ? r.checkpointed : Math.max(0, r.checkpointed - seenCheckpointed);
      seenLog = r.log;
      seenCheckpointed = r.checkpointed;
      st[S.walFrames] = r.log;
    }
    return r;
  } catch (err) {
    if (isBusy(err)) { st[S.busy]++; return null; }
    st[S.errors]++;
    consecutiveErrors++;
    errorPauseUntil = performance.now() + ERROR_PAUSE_MS;
    const code = (err && err.code) || 'unknown';
    if (!reportedErrors.has(code)) {
      reportedErrors.add(code);
      log('error', { path: o.path, mode, code, err: String((err && err.message) || err) }, 'store checkpointer: checkpoint failed; retrying every second');
    }
    if (consecutiveErrors >= MAX_CONSECUTIVE_ERRORS) throw new Error('checkpoints keep failing (' + code + '): giving up so the writer checkpoints again');
    return null;
  } finally {
    if (waitMs > 0) { try { db.pragma('busy_timeout = 0'); } catch {} }
  }
}

function run() {
  let seqAtCheckpoint = Atomics.load(ctrl, NUDGES);
  let everNudged = false;
  let lastAt = performance.now();
  let prevLog = 0;
  let pending = 0;
  let framesPerCommit = 4;
  let over = false;
  let nextEscalationAt = 0;
  let backoffMs = o.escalationBackoffMs;
  let restartedAt = -1;
  let restartNotBefore = 0;
  let restartBackoffMs = RESTART_BACKOFF_MS;
  parentPort.postMessage({ type: 'ready' });
  while (Atomics.load(ctrl, STOP) === 0) {
    Atomics.wait(ctrl, STOP, 0, o.intervalMs);
    if (Atomics.load(ctrl, STOP) !== 0) break;
    const now = performance.now();
    if (now < errorPauseUntil) continue;
    const seq = Atomics.load(ctrl, NUDGES);
    const commits = (seq - seqAtCheckpoint) | 0;
    if (commits !== 0) everNudged = true;
    const estimate = pending + commits * framesPerCommit;
    const due = estimate >= o.walPagesThreshold ||
      (now - lastAt >= o.maxDelayMs && (commits !== 0 || pending > 0 || !everNudged));
    if (!due) continue;
    seqAtCheckpoint = seq;
    lastAt = now;
    let r = checkpoint('PASSIVE', 0);
    if (r === null || r.log < 0) continue;
    const added = r.log >= prevLog ? r.log - prevLog : r.log;
    if (commits > 0 && added > 0) framesPerCommit = 0.7 * framesPerCommit + 0.3 * (added / commits);
    prevLog = r.log;
    pending = r.log - r.checkpointed;
    // Catch up with what was committed meanwhile: the writer restarts the WAL from its start only when it begins a
    // transaction while every frame is checkpointed, and a short last pass leaves a gap between commits for that.
    for (let pass = 0; pass < 3 && pending > 0 && Atomics.load(ctrl, STOP) === 0; pass++) {
      const next = checkpoint('PASSIVE', 0);
      if (next === null || next.log < 0) break;
      const left = next.log - next.checkpointed;
      if (next.log >= r.log && left >= pending) break;
      r = next;
      prevLog = r.log;
      pending = left;
    }
    // RESTART holds the write lock while it copies what PASSIVE left and waits for readers, so only when little is
    // left (a reader pinning old frames leaves a lot: that is the hard bound's business), not again before the
    // writer wrote (a RESTART that went through lets its next transaction restart the WAL), and backing off while
    // readers keep it busy.
    if (r.log >= o.restartFrames && pending <= o.walPagesThreshold / 4 && r.log !== restartedAt && now >= restartNotBefore) {
      st[S.restarts]++;
      const rr = checkpoint('RESTART', o.restartWaitMs);
      if (rr !== null && rr.log >= 0) pending = rr.log - rr.checkpointed;
      if (rr !== null && rr.busy === 0) {
        restartedAt = rr.log;
        restartBackoffMs = RESTART_BACKOFF_MS;
      } else {
        restartNotBefore = now + restartBackoffMs;
        restartBackoffMs = Math.min(restartBackoffMs * 2, 2000);
      }
    }
    const bytes = walBytes();
    st[S.walBytes] = bytes;
    if (bytes > o.walHardLimitBytes) {
      if (now < nextEscalationAt) continue;
      if (!over) {
        over = true;
        log('warn', { path: o.path, walBytes: bytes, limitBytes: o.walHardLimitBytes, walFrames: r.log, uncheckpointedFrames: pending },
          'store checkpointer: WAL over its bound (a reader holds an old snapshot, or writes outpace checkpoints); escalating to TRUNCATE checkpoints, which make writers wait up to ' + o.escalationWaitMs + ' ms');
      }
      st[S.escalations]++;
      const tr = checkpoint('TRUNCATE', o.escalationWaitMs);
      if (tr !== null && tr.busy === 0) { prevLog = 0; pending = 0; }
      st[S.walBytes] = walBytes();
      if (st[S.walBytes] > o.walHardLimitBytes) {
        nextEscalationAt = now + backoffMs;
        backoffMs = Math.min(backoffMs * 2, 30000);
        continue;
      }
    }
    if (over && st[S.walBytes] <= o.walHardLimitBytes) {
      over = false;
      backoffMs = o.escalationBackoffMs;
      nextEscalationAt = 0;
      log('info', { path: o.path, walBytes: st[S.walBytes] }, 'store checkpointer: WAL back under its bound');
    }
  }
  let final = null;
  try {
    final = checkpoint('TRUNCATE', o.stopWaitMs);
    if (final === null || final.busy) final = checkpoint('PASSIVE', 0) || final;
  } catch {}
  db.close();
  parentPort.postMessage({ type: 'stopped', walBytes: walBytes(), final });
}

if (db) run();
`;

/** Worker of each checkpointer, for tests that simulate a crash. */
const workers = new WeakMap<Checkpointer, Worker>();

/**
 * Start a checkpointer for the WAL database at `opts.path` (opened and migrated by the writer first). Returns at
 * once; the worker starts in the background (`ready`). Never throws: when the worker cannot start or dies, the
 * checkpointer falls back (state `fallback`, `onFallback`, and with `writer` its auto-checkpoint back on). The worker
 * does not keep the process alive except while it starts and during {@link Checkpointer.stop}.
 */
export function startCheckpointer(opts: CheckpointerOptions): Checkpointer {
  const logger = opts.logger;
  const ctrlBuffer = new SharedArrayBuffer(8);
  const ctrl = new Int32Array(ctrlBuffer);
  const statsBuffer = new SharedArrayBuffer(8 * STAT_FIELDS.length);
  const statsView = new Float64Array(statsBuffer);
  const threshold = positive(opts.walPagesThreshold, DEFAULTS.walPagesThreshold);
  const options: WorkerOptions = {
    path: path.resolve(opts.path),
    synchronous: opts.synchronous === 'normal' ? 'NORMAL' : 'FULL',
    intervalMs: positive(opts.intervalMs, DEFAULTS.intervalMs),
    walPagesThreshold: threshold,
    maxDelayMs: positive(opts.maxDelayMs, DEFAULTS.maxDelayMs),
    restartFrames: positive(opts.restartFrames, 4 * threshold),
    restartWaitMs: positive(opts.restartWaitMs, DEFAULTS.restartWaitMs),
    walHardLimitBytes: positive(opts.walHardLimitBytes, DEFAULTS.walHardLimitBytes),
    escalationWaitMs: positive(opts.escalationWaitMs, DEFAULTS.escalationWaitMs),
    escalationBackoffMs: positive(opts.escalationBackoffMs, DEFAULTS.escalationBackoffMs),
    stopWaitMs: positive(opts.stopWaitMs, DEFAULTS.stopWaitMs),
  };

  let state: CheckpointerState = 'starting';
  let writerAutocheckpoint: number | undefined;
  let resolveReady: (running: boolean) => void = () => {};
  const ready = new Promise<boolean>((resolve) => (resolveReady = resolve));
  let stopping: Promise<void> | undefined;
  let failure: Error | undefined;

  const restoreWriter = (): void => {
    if (writerAutocheckpoint === undefined || opts.writer === undefined || !opts.writer.open) return;
    try {
      opts.writer.pragma(`wal_autocheckpoint = ${writerAutocheckpoint}`);
    } catch (err) {
      logger?.error(
        { err, path: options.path },
        'store checkpointer: cannot turn the writer auto-checkpoint back on',
      );
    }
  };
  const fallBack = (reason: Error): void => {
    if (state === 'fallback' || state === 'stopped' || stopping !== undefined) return;
    state = 'fallback';
    restoreWriter();
    writerAutocheckpoint = undefined;
    logger?.warn(
      { err: reason.message, path: options.path },
      'store checkpointer: worker not running; the writer checkpoints the WAL itself again',
    );
    resolveReady(false);
    try {
      opts.onFallback?.(reason);
    } catch (err) {
      logger?.error({ err }, 'store checkpointer: onFallback threw');
    }
  };

  const handle: Checkpointer = {
    nudge: () => {
      Atomics.add(ctrl, CTRL_NUDGES, 1);
    },
    ready,
    stats: () => {
      const s = { state, nudges: Atomics.load(ctrl, CTRL_NUDGES) >>> 0 } as CheckpointerStats;
      STAT_FIELDS.forEach((f, i) => (s[f] = statsView[i] ?? 0));
      return s;
    },
    stop: () => stopping ?? (stopping = Promise.resolve()),
  };

  let driver: string;
  let worker: Worker;
  // Messages come over a channel of our own: a 'message' listener on the Worker itself refs its port and would keep
  // the process alive whatever worker.unref() says; this port can be unref'd.
  const { port1: port, port2: workerPort } = new MessageChannel();
  try {
    driver = createRequire(import.meta.url).resolve('better-sqlite3');
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { options, driver, ctrl: ctrlBuffer, stats: statsBuffer, port: workerPort },
      transferList: [workerPort],
      // The worker holds a connection and a few numbers; a leak there must not grow the server.
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
      stdout: false,
      stderr: false,
    });
  } catch (err) {
    port.close();
    queueMicrotask(() => fallBack(asError(err)));
    return handle;
  }
  worker.unref();
  workers.set(handle, worker);

  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  port.on('message', (m: WorkerMessage) => {
    // The port stays ref'd until the worker said whether it runs, so that awaiting `ready` works in a process with
    // nothing else to do; after that, neither the port nor the worker keeps the process alive.
    if (m.type === 'ready' || m.type === 'failed') port.unref();
    switch (m.type) {
      case 'ready':
        if (state !== 'starting' || stopping !== undefined) return;
        try {
          if (opts.writer !== undefined) {
            const current = Number(opts.writer.pragma('wal_autocheckpoint', { simple: true }));
            writerAutocheckpoint = current > 0 ? current : SQLITE_DEFAULT_AUTOCHECKPOINT;
            opts.writer.pragma('wal_autocheckpoint = 0');
          }
        } catch (err) {
          // The writer is closed or broken: nothing to take over; let the worker go.
          Atomics.store(ctrl, CTRL_STOP, 1);
          Atomics.notify(ctrl, CTRL_STOP);
          fallBack(asError(err));
          return;
        }
        state = 'running';
        resolveReady(true);
        return;
      case 'failed':
        failure = new Error(`checkpointer worker cannot open ${options.path}: ${m.message}`);
        return;
      case 'log':
        logger?.[m.level](m.obj, m.msg);
        return;
      case 'stopped':
        logger?.debug(
          { path: options.path, walBytes: m.walBytes, final: m.final },
          'store checkpointer: stopped',
        );
        return;
    }
  });
  worker.on('error', (err) => {
    failure = asError(err);
  });
  worker.on('exit', (code) => {
    // Messages the worker posted before it ended are still queued on the port: let them arrive first.
    setImmediate(() => port.close());
    fallBack(failure ?? new Error(`checkpointer worker exited (code ${code})`));
  });

  handle.stop = () => {
    if (stopping !== undefined) return stopping;
    const wasRunning = state === 'running';
    stopping = (async () => {
      if (state === 'starting' || state === 'running') {
        worker.ref();
        Atomics.store(ctrl, CTRL_STOP, 1);
        Atomics.notify(ctrl, CTRL_STOP);
        let timer: NodeJS.Timeout | undefined;
        const cut = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, options.stopWaitMs + STOP_GRACE_MS);
        });
        await Promise.race([exited, cut]);
        clearTimeout(timer);
        await worker.terminate().catch(() => undefined);
      }
      if (wasRunning) restoreWriter();
      writerAutocheckpoint = undefined;
      state = 'stopped';
      resolveReady(false);
    })();
    return stopping;
  };
  return handle;
}

/** @internal The worker behind a checkpointer (tests end it to simulate a crash). */
export function checkpointerWorker(c: Checkpointer): Worker | undefined {
  return workers.get(c);
}

function positive(v: number | undefined, fallback: number): number {
  return v !== undefined && Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
