/**
 * The computers' mirrored screens (issue 36 item 3): the latest screen of each computer whose screen mirror is on,
 * kept in memory only (a screen is a view, never a record), and its live stream to the dashboard.
 *
 * A `screen_frame` from a computer ({@link ScreenHub.apply}) either fits — a full frame replaces the screen; a
 * partial one changes the rows it carries of the screen the same connection sent, at the same size — or is refused
 * with a reason and changes nothing. Frames are also limited per computer to {@link SCREEN_MAX_FPS} a second
 * (burst twice that); a refused frame makes the computer's next partial frame unplaceable too, so it must send a
 * full one (the Lua host does on any screen refusal).
 *
 * A watcher (`GET /api/clients/:id/screen/stream`) gets every row first, then the rows that changed, coalesced to at
 * most {@link SCREEN_MAX_FPS} events a second whatever the computer sends; a watcher whose socket does not drain
 * skips events and gets every row once it does.
 */
import type { ServerResponse } from 'node:http';
import {
  CC_DEFAULT_PALETTE,
  SCREEN_MAX_FPS,
  type HttpScreen,
  type ScreenCursor,
  type ScreenFrameMessage,
  type ScreenLine,
} from '@ccagent/protocol';
import type { ClientPersistence } from '../client-persistence.js';
import { TokenBucket } from '../ws/token-bucket.js';

/** Bytes a watcher's socket may hold unsent before its events are skipped (it gets every row once it drains). */
export const WATCHER_BUFFER_BYTES = 256 * 1024;
/** Shortest interval between two events to one watcher (ms). */
export const WATCHER_INTERVAL_MS = Math.ceil(1000 / SCREEN_MAX_FPS);

/** The outcome of {@link ScreenHub.apply}. */
export type ApplyResult =
  | { ok: true }
  | { ok: false; code: 'invalid_message' | 'rate_limited' | 'forbidden'; message: string; path?: string };

/** Most viewers of one computer's screen and of all screens at once (`server.screen`). */
export const DEFAULT_MAX_VIEWERS_PER_COMPUTER = 8;
export const DEFAULT_MAX_VIEWERS = 64;

/** What else the hub is told (see {@link ScreenHub}). */
export interface ScreenHubOptions {
  /** The server's word on a computer's mirror (false: its frames are refused, see screen-switches.ts). */
  serverSays?: (clientId: string) => boolean | undefined;
  /** Most streams of one computer's screen at once (default {@link DEFAULT_MAX_VIEWERS_PER_COMPUTER}). */
  maxViewersPerComputer?: number;
  /** Most streams of all screens at once (default {@link DEFAULT_MAX_VIEWERS}). */
  maxViewers?: number;
}

/** The outcome of {@link ScreenHub.watch}: a refusal writes nothing to the response. */
export type WatchResult = { ok: true } | { ok: false; scope: 'computer' | 'server'; message: string };

interface Screen {
  clientId: string;
  /** The connection whose frames it holds (a partial frame from another one cannot be placed). */
  connection: number;
  width: number;
  height: number;
  text: string[];
  fg: string[];
  bg: string[];
  cursor: ScreenCursor;
  palette: number[];
  updatedAt: number;
  frames: number;
  connected: boolean;
  /** A frame was refused: the next must be full. */
  needsFull: boolean;
  bucket: TokenBucket;
  watchers: Set<Watcher>;
}

interface Watcher {
  res: ServerResponse;
  /** Rows changed since the last event; `full`: every row (first event, resize, after skipping). */
  rows: Set<number>;
  full: boolean;
  cursorMoved: boolean;
  lastAt: number;
  timer: NodeJS.Timeout | undefined;
}

/** See the module comment. */
export class ScreenHub {
  private readonly screens = new Map<string, Screen>();
  /** Watchers of a computer that has sent no screen yet. */
  private readonly waiting = new Map<string, Set<Watcher>>();

  constructor(
    private readonly now: () => number,
    private readonly isConnected: (clientId: string) => boolean = () => true,
    private readonly opts: ScreenHubOptions = {},
  ) {}

  /** Apply one frame from `clientId` on connection `connection` (the gateway's serial). */
  apply(clientId: string, connection: number, f: ScreenFrameMessage): ApplyResult {
    if (this.opts.serverSays?.(clientId) === false) {
      // Checked first, before anything is kept or counted: an operator switched this screen off.
      return {
        ok: false,
        code: 'forbidden',
        message: `screen_frame: the screen mirror of ${clientId} is off at the server (an operator's switch or the config file's server.screen); frames are not kept`,
      };
    }
    const at = this.now();
    const old = this.screens.get(clientId);
    if (old && !old.bucket.take(at)) {
      old.needsFull = true;
      return {
        ok: false,
        code: 'rate_limited',
        message: `screen_frame: more than ${SCREEN_MAX_FPS} frames a second; send a full frame later`,
      };
    }
    if (!f.full) {
      const why = !old
        ? 'the server holds no screen of this computer'
        : old.connection !== connection
          ? 'the screen the server holds came from an earlier connection'
          : old.needsFull
            ? 'an earlier frame was refused'
            : old.width !== f.width || old.height !== f.height
              ? `the screen the server holds is ${old.width}x${old.height}, not ${f.width}x${f.height}`
              : undefined;
      if (why !== undefined) {
        return {
          ok: false,
          code: 'invalid_message',
          message: `screen_frame: ${why}: send a full frame`,
          path: '$.full',
        };
      }
    }
    const s: Screen =
      old && f.full && (old.width !== f.width || old.height !== f.height || old.connection !== connection)
        ? { ...old, ...blank(f.width, f.height), connection }
        : (old ?? this.create(clientId, connection, f, at));
    s.connection = connection;
    for (const l of f.lines) {
      s.text[l.y - 1] = l.text;
      s.fg[l.y - 1] = l.fg;
      s.bg[l.y - 1] = l.bg;
    }
    const resized = !old || old.width !== f.width || old.height !== f.height;
    s.width = f.width;
    s.height = f.height;
    const cursorMoved =
      s.cursor.x !== f.cursor.x || s.cursor.y !== f.cursor.y || s.cursor.blink !== f.cursor.blink;
    s.cursor = { ...f.cursor };
    if (f.palette) s.palette = [...f.palette];
    s.updatedAt = at;
    s.frames += 1;
    s.connected = true;
    s.needsFull = false;
    this.screens.set(clientId, s);
    for (const w of s.watchers) {
      if (resized || f.full || f.palette) w.full = true;
      for (const l of f.lines) w.rows.add(l.y);
      if (cursorMoved) w.cursorMoved = true;
      this.schedule(s, w);
    }
    return { ok: true };
  }

  /** The screen of a computer, every row (undefined when it has sent none since the server started). */
  get(clientId: string): HttpScreen | undefined {
    const s = this.screens.get(clientId);
    return s ? this.record(s, undefined) : undefined;
  }

  /** Frames received from a computer since the server started (0 when none). */
  frames(clientId: string): number {
    return this.screens.get(clientId)?.frames ?? 0;
  }

  /** The computer disconnected: its last screen stays, its watchers are told. */
  disconnected(clientId: string): void {
    const s = this.screens.get(clientId);
    if (!s) return;
    s.connected = false;
    for (const w of s.watchers) write(w.res, 'offline', { client_id: clientId });
  }

  /** The server switched `clientId`'s mirror off: forget its screen, tell its watchers and end their streams. */
  switchedOff(clientId: string): void {
    const s = this.screens.get(clientId);
    this.screens.delete(clientId);
    const ws = [...(s?.watchers ?? []), ...(this.waiting.get(clientId) ?? [])];
    this.waiting.delete(clientId);
    for (const w of ws) {
      if (w.timer) clearTimeout(w.timer);
      write(w.res, 'off', { client_id: clientId });
      w.res.end();
    }
  }

  /** Wrap a client store so that a computer's disconnect reaches its watchers (as the event hub does). */
  observeClients(inner: ClientPersistence): ClientPersistence {
    return {
      ...inner,
      clientSeen: (input) => inner.clientSeen(input),
      clientDisconnected: async (clientId, at) => {
        await inner.clientDisconnected(clientId, at);
        this.disconnected(clientId);
      },
      replaceTools: (clientId, tools, at) => inner.replaceTools(clientId, tools, at),
      listClients: () => inner.listClients(),
      listTools: (filter) => inner.listTools(filter),
    };
  }

  /**
   * Turn `res` into the live stream of `clientId`'s screen, unless that would pass a viewer cap (then nothing is
   * written and the caller answers the refusal; the other streams are untouched). A closed stream frees its slot.
   */
  watch(res: ServerResponse, clientId: string): WatchResult {
    const perComputer = this.opts.maxViewersPerComputer ?? DEFAULT_MAX_VIEWERS_PER_COMPUTER;
    const total = this.opts.maxViewers ?? DEFAULT_MAX_VIEWERS;
    const here = (this.screens.get(clientId)?.watchers.size ?? 0) + (this.waiting.get(clientId)?.size ?? 0);
    if (here >= perComputer) {
      return {
        ok: false,
        scope: 'computer',
        message: `${clientId}'s screen already has ${here} viewers (server.screen.maxViewersPerComputer is ${perComputer}); close one or retry later`,
      };
    }
    if (this.watcherCount >= total) {
      return {
        ok: false,
        scope: 'server',
        message: `the server already streams ${this.watcherCount} screens (server.screen.maxViewers is ${total}); close one or retry later`,
      };
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.write('retry: 2000\n\n');
    const w: Watcher = { res, rows: new Set(), full: true, cursorMoved: false, lastAt: 0, timer: undefined };
    const s = this.screens.get(clientId);
    let set: Set<Watcher>;
    if (s) {
      set = s.watchers;
      this.flush(s, w);
    } else {
      set = this.waiting.get(clientId) ?? new Set();
      this.waiting.set(clientId, set);
    }
    set.add(w);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    const drop = (): void => {
      clearInterval(ping);
      if (w.timer) clearTimeout(w.timer);
      this.screens.get(clientId)?.watchers.delete(w);
      const waiting = this.waiting.get(clientId);
      if (waiting) {
        waiting.delete(w);
        if (waiting.size === 0) this.waiting.delete(clientId);
      }
    };
    res.on('close', drop);
    res.on('drain', () => {
      const cur = this.screens.get(clientId);
      if (cur && w.full) this.schedule(cur, w);
    });
    return { ok: true };
  }

  /** Watchers connected now (all computers). */
  get watcherCount(): number {
    let n = 0;
    for (const s of this.screens.values()) n += s.watchers.size;
    for (const set of this.waiting.values()) n += set.size;
    return n;
  }

  /** End every stream (server shutdown). */
  close(): void {
    const all = [...this.screens.values()].flatMap((s) => [...s.watchers]);
    for (const set of this.waiting.values()) all.push(...set);
    for (const w of all) {
      if (w.timer) clearTimeout(w.timer);
      w.res.end();
    }
  }

  private create(clientId: string, connection: number, f: ScreenFrameMessage, at: number): Screen {
    const watchers = this.waiting.get(clientId) ?? new Set<Watcher>();
    this.waiting.delete(clientId);
    return {
      clientId,
      connection,
      ...blank(f.width, f.height),
      cursor: { ...f.cursor },
      palette: [...CC_DEFAULT_PALETTE],
      updatedAt: at,
      frames: 0,
      connected: true,
      needsFull: false,
      bucket: new TokenBucket(SCREEN_MAX_FPS, 2 * SCREEN_MAX_FPS, at),
      watchers,
    };
  }

  private schedule(s: Screen, w: Watcher): void {
    if (w.timer) return;
    const wait = Math.max(0, w.lastAt + WATCHER_INTERVAL_MS - Date.now());
    w.timer = setTimeout(() => {
      w.timer = undefined;
      this.flush(s, w);
    }, wait);
    w.timer.unref();
  }

  private flush(s: Screen, w: Watcher): void {
    if (w.res.writableLength > WATCHER_BUFFER_BYTES) {
      // Not draining: skip, and send every row once it does.
      w.full = true;
      w.rows.clear();
      return;
    }
    if (!w.full && w.rows.size === 0 && !w.cursorMoved) return;
    const rec = this.record(s, w.full ? undefined : w.rows);
    w.full = false;
    w.rows.clear();
    w.cursorMoved = false;
    w.lastAt = Date.now();
    write(w.res, 'screen', rec);
  }

  /** A record of `s`: every row (`rows` undefined, `full`), or only those of `rows`. */
  private record(s: Screen, rows: ReadonlySet<number> | undefined): HttpScreen {
    const ys = rows ? [...rows].filter((y) => y <= s.height).sort((a, b) => a - b) : range(s.height);
    const lines: ScreenLine[] = ys.map((y) => ({
      y,
      text: s.text[y - 1]!,
      fg: s.fg[y - 1]!,
      bg: s.bg[y - 1]!,
    }));
    return {
      client_id: s.clientId,
      connected: s.connected && this.isConnected(s.clientId),
      updated_at: s.updatedAt,
      frames: s.frames,
      width: s.width,
      height: s.height,
      full: rows === undefined,
      cursor: { ...s.cursor },
      palette: [...s.palette],
      lines,
    };
  }
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

function blank(
  width: number,
  height: number,
): { width: number; height: number; text: string[]; fg: string[]; bg: string[] } {
  return {
    width,
    height,
    text: Array.from({ length: height }, () => ' '.repeat(width)),
    fg: Array.from({ length: height }, () => '0'.repeat(width)),
    bg: Array.from({ length: height }, () => 'f'.repeat(width)),
  };
}

function write(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
