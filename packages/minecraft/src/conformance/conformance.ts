/**
 * The protocol conformance kit: plays the backend against any mod and reports, check by check, which messages and
 * behaviours are right — register, state updates, every action type answered with its id, a repeated id answered
 * with the earlier outcome, stop, answers within the action timeout, reconnect after 5 s with the same instance id,
 * and that an `error` frame does not break the mod.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { MinecraftError } from '../minecraft-error.js';
import { DEFAULT_ACTION_TIMEOUT_MS, MC_PROTOCOL_VERSION, RECONNECT_DELAY_MS } from '../protocol/constants.js';
import type { Action, ActionSpec, BackendMessage, ModMessage, PlayerState } from '../protocol/messages.js';
import { parseModMessage } from '../protocol/parse.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Port to listen on for the mod (default 9876; 0 = any, read it from `onListening`). */
  port?: number;
  host?: string;
  /** Called with the URL once listening (start the mod then). */
  onListening?: (url: string) => void;
  /** How long to wait for the mod to connect, ms (default 120,000). */
  connectTimeoutMs?: number;
  /** Per-action timeout, ms (default 60,000, the protocol's). */
  actionTimeoutMs?: number;
  /** How long after `stop` the stopped action must be answered, ms (default 10,000). */
  stopWaitMs?: number;
  /** Skip the reconnect check (it closes the connection and waits about 5 s). */
  skipReconnect?: boolean;
  /** Actions to try, by type; default: harmless ones relative to the player's position. */
  actions?: (state: PlayerState | null) => ActionSpec[];
  /** Progress lines (the command prints them). */
  onProgress?: (line: string) => void;
  /**
   * `ccagent` (default): every check counts. `seed`: a mod written from the seed's protocol page alone passes — the
   * checks of what ccagent adds (`repeated id`: never run an id twice; `error frame`) are still run and reported,
   * marked `extension`, but do not count towards `passed`.
   */
  profile?: 'ccagent' | 'seed';
}

/** One check's verdict. */
export interface ConformanceCheck {
  name: string;
  ok: boolean;
  detail: string;
  /** A check of what ccagent adds to the seed's protocol (does not count towards `passed` with `profile: 'seed'`). */
  extension?: boolean;
}

/** The report: every check, and whether all passed. */
export interface ConformanceReport {
  instanceId: string | null;
  checks: ConformanceCheck[];
  passed: boolean;
}

interface Conn {
  ws: WebSocket;
  frames: ModMessage[];
  invalid: string[];
  closed: boolean;
  waiters: Array<() => void>;
}

/** Actions the kit sends by default: every type, harmless near the player (failures are fine, answers are checked). */
export function defaultConformanceActions(state: PlayerState | null): ActionSpec[] {
  const p = state?.position ?? { x: 0, y: 64, z: 0 };
  const x = Math.floor(p.x);
  const y = Math.floor(p.y);
  const z = Math.floor(p.z);
  return [
    { type: 'chat', message: 'ccagent conformance check' },
    { type: 'goto', x: x + 2, y, z },
    { type: 'place', block: 'dirt', x: x + 1, y, z: z + 2 },
    { type: 'mine', target: 'dirt', quantity: 1 },
    { type: 'craft', recipe: 'oak_planks', quantity: 1 },
    { type: 'smelt', item: 'raw_iron', quantity: 1 },
    { type: 'interact', target: 'lever', x, y, z: z + 3 },
    { type: 'open_inventory' },
    // The seed's block-by-coordinates form: the dirt placed above.
    { type: 'mine', x: x + 1, y, z: z + 2 },
    // The seed's goal-level form: to the nearest block or entity of that name.
    { type: 'goto', target: 'dirt' },
  ];
}

/**
 * Listen for one mod, run every check and resolve with the report (never rejects for a mod's fault; rejects with
 * `MinecraftError('listen_failed')` when the port cannot be bound).
 */
export async function runConformance(opts: ConformanceOptions = {}): Promise<ConformanceReport> {
  const actionTimeout = opts.actionTimeoutMs ?? DEFAULT_ACTION_TIMEOUT_MS;
  const progress = opts.onProgress ?? (() => undefined);
  const host = opts.host ?? '127.0.0.1';
  const wss = new WebSocketServer({ host, port: opts.port ?? 9876 });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', (e) =>
      reject(new MinecraftError('listen_failed', `cannot listen: ${e.message}`, { cause: e })),
    );
  });
  const url = `ws://${host}:${(wss.address() as AddressInfo).port}`;
  const conns: Conn[] = [];
  let newConn: (() => void) | null = null;
  wss.on('connection', (ws) => {
    const c: Conn = { ws, frames: [], invalid: [], closed: false, waiters: [] };
    ws.on('message', (d) => {
      const r = parseModMessage(String(d));
      if (r.ok) c.frames.push(r.value);
      else c.invalid.push(`${r.error.code}: ${r.error.message}`);
      for (const w of c.waiters.splice(0)) w();
    });
    ws.on('close', () => {
      c.closed = true;
      for (const w of c.waiters.splice(0)) w();
    });
    conns.push(c);
    newConn?.();
  });
  opts.onProgress?.(`listening on ${url}: start the mod (or the bridge) with this address`);
  opts.onListening?.(url);

  const checks: ConformanceCheck[] = [];
  const EXTENSIONS = new Set(['repeated id', 'error frame']);
  const check = (name: string, ok: boolean, detail: string): void => {
    const extension = EXTENSIONS.has(name);
    checks.push({ name, ok, detail, ...(extension ? { extension } : {}) });
    progress(`${ok ? 'PASS' : 'FAIL'}  ${name}${extension ? ' (ccagent extension)' : ''}: ${detail}`);
  };
  const passed = (): boolean =>
    checks.every((c) => c.ok || (opts.profile === 'seed' && c.extension === true));
  const send = (c: Conn, m: BackendMessage): void => c.ws.send(JSON.stringify(m));
  const waitConn = (ms: number): Promise<Conn | null> =>
    new Promise((resolve) => {
      const before = conns.length;
      const t = setTimeout(() => {
        newConn = null;
        resolve(null);
      }, ms);
      newConn = () => {
        if (conns.length > before) {
          clearTimeout(t);
          newConn = null;
          resolve(conns[conns.length - 1] ?? null);
        }
      };
    });
  /** The first frame from index `from` matching `pred`, or null after `ms`. */
  const waitFrame = async <T extends ModMessage>(
    c: Conn,
    pred: (m: ModMessage) => m is T,
    ms: number,
    from = 0,
  ): Promise<T | null> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = c.frames.slice(from).find(pred);
      if (hit) return hit;
      if (c.closed || Date.now() >= deadline) return null;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(0, deadline - Date.now()));
        c.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  };
  const outcomeOf =
    (id: string) =>
    (m: ModMessage): m is Extract<ModMessage, { type: 'action_complete' | 'action_failed' }> =>
      (m.type === 'action_complete' || m.type === 'action_failed') && m.actionId === id;

  let instanceId: string | null = null;
  try {
    const first = conns[0] ?? (await waitConn(opts.connectTimeoutMs ?? 120_000));
    if (first === null) {
      check('connect', false, 'no mod connected in time');
      return { instanceId, checks, passed: false };
    }
    // register
    const firstFrame = await waitFrame(first, (_m): _m is ModMessage => true, 10_000);
    if (firstFrame?.type === 'register') {
      instanceId = firstFrame.instanceId;
      // `version` is the game's (the seed's); the protocol version is `protocolVersion`, 1.0 when absent.
      const protocol = firstFrame.protocolVersion ?? MC_PROTOCOL_VERSION;
      const major = protocol.split('.')[0] === MC_PROTOCOL_VERSION.split('.')[0];
      check(
        'register',
        major,
        `first frame is register {instanceId: ${instanceId}, game version: ${firstFrame.version}, protocol ${protocol}}${major ? '' : ` (this kit speaks ${MC_PROTOCOL_VERSION})`}`,
      );
    } else {
      check(
        'register',
        false,
        firstFrame
          ? `first frame was ${firstFrame.type}, not register`
          : `no valid first frame (${first.invalid[0] ?? 'nothing sent'})`,
      );
      return { instanceId, checks, passed: false };
    }
    send(first, { type: 'registered', success: true });
    // state_update
    const st = await waitFrame(
      first,
      (m): m is Extract<ModMessage, { type: 'state_update' }> => m.type === 'state_update',
      10_000,
    );
    check(
      'state_update',
      st !== null && st.instanceId === instanceId,
      st
        ? `position ${st.data.position.x} ${st.data.position.y} ${st.data.position.z}, ${st.data.inventory.length} inventory slots, ${st.data.gameMode}`
        : 'no state_update within 10 s of registered',
    );
    let state: PlayerState | null = st?.data ?? null;

    // every action type, one at a time, answered with its id
    const specs = (opts.actions ?? defaultConformanceActions)(state);
    const outcomes = new Map<string, ModMessage>();
    let n = 0;
    const named = (spec: ActionSpec): string =>
      spec.type === 'mine' && spec.target === undefined
        ? 'mine (by coordinates)'
        : spec.type === 'goto' && spec.target !== undefined
          ? 'goto (by target)'
          : spec.type;
    for (const spec of specs) {
      const action = { ...spec, id: `conformance-${++n}-${spec.type}` } as Action;
      const from = first.frames.length;
      const started = Date.now();
      send(first, { type: 'execute_action', action });
      const o = await waitFrame(first, outcomeOf(action.id), actionTimeout, from);
      if (o !== null) outcomes.set(action.id, o);
      const ms = Date.now() - started;
      const wrongInstance = o !== null && 'instanceId' in o && o.instanceId !== instanceId;
      check(
        `action ${named(spec)}`,
        o !== null && !wrongInstance,
        o === null
          ? `no action_complete/action_failed for ${action.id} within ${actionTimeout} ms`
          : wrongInstance
            ? `answered with another instanceId`
            : `${o.type}${o.type === 'action_failed' ? ` (${o.error})` : ''} in ${ms} ms`,
      );
      const latest = [...first.frames].reverse().find((m) => m.type === 'state_update');
      if (latest?.type === 'state_update') state = latest.data;
    }

    // a repeated id is not run again: the earlier outcome comes back
    const firstId = `conformance-1-${specs[0]?.type ?? 'chat'}`;
    const earlier = outcomes.get(firstId);
    if (earlier !== undefined && specs[0] !== undefined) {
      const from = first.frames.length;
      send(first, { type: 'execute_action', action: { ...specs[0], id: firstId } as Action });
      const again = await waitFrame(first, outcomeOf(firstId), actionTimeout, from);
      const same = again !== null && JSON.stringify({ ...again }) === JSON.stringify({ ...earlier });
      check(
        'repeated id',
        same,
        again === null
          ? `no answer to the repeated id ${firstId}`
          : same
            ? 'the earlier outcome was reported again'
            : `a different outcome came back: ${again.type}`,
      );
    } else {
      check('repeated id', false, 'the first action was never answered, so a repeat cannot be checked');
    }

    // stop: a long walk is stopped and its id answered
    const p = state?.position ?? { x: 0, y: 64, z: 0 };
    const walk = {
      id: 'conformance-stop-goto',
      type: 'goto',
      x: Math.floor(p.x) + 40,
      y: Math.floor(p.y),
      z: Math.floor(p.z),
    } as Action;
    const from = first.frames.length;
    send(first, { type: 'execute_action', action: walk });
    await new Promise((r) => setTimeout(r, 300));
    const stopAt = Date.now();
    send(first, { type: 'stop' });
    const stopWait = opts.stopWaitMs ?? 10_000;
    const stopped = await waitFrame(first, outcomeOf(walk.id), stopWait, from);
    check(
      'stop',
      stopped !== null,
      stopped
        ? `${stopped.type}${stopped.type === 'action_failed' ? ` (${stopped.error})` : ''} ${Date.now() - stopAt} ms after stop`
        : `the action was not answered within ${stopWait} ms of stop`,
    );

    // an error frame does not break the mod
    send(first, {
      type: 'error',
      code: 'invalid_message',
      message: 'conformance: a refused frame (ignore me)',
    });
    const ping = { id: 'conformance-after-error', type: 'chat', message: 'still here' } as Action;
    const from2 = first.frames.length;
    send(first, { type: 'execute_action', action: ping });
    const alive = await waitFrame(first, outcomeOf(ping.id), actionTimeout, from2);
    check(
      'error frame',
      alive !== null && !first.closed,
      alive ? 'the mod kept working after an error frame' : 'no answer after an error frame',
    );

    // valid frames only
    check(
      'frames valid',
      first.invalid.length === 0,
      first.invalid.length === 0
        ? `${first.frames.length} frames, all valid`
        : `${first.invalid.length} invalid: ${first.invalid.slice(0, 3).join('; ')}`,
    );

    // reconnect after about 5 s with the same instance id
    if (!opts.skipReconnect) {
      const closedAt = Date.now();
      const next = waitConn(RECONNECT_DELAY_MS * 4);
      first.ws.close(1012, 'conformance: reconnect check');
      const second = await next;
      const after = Date.now() - closedAt;
      const reg = second
        ? await waitFrame(
            second,
            (m): m is Extract<ModMessage, { type: 'register' }> => m.type === 'register',
            10_000,
          )
        : null;
      const okDelay = after >= RECONNECT_DELAY_MS - 1_000 && after <= RECONNECT_DELAY_MS * 3;
      check(
        'reconnect',
        reg !== null && reg.instanceId === instanceId && okDelay,
        reg === null
          ? `no reconnect with register within ${(RECONNECT_DELAY_MS * 4) / 1000} s`
          : reg.instanceId !== instanceId
            ? `reconnected as ${reg.instanceId}, not ${instanceId}`
            : `reconnected and registered after ${(after / 1000).toFixed(1)} s${okDelay ? '' : ` (expected about ${RECONNECT_DELAY_MS / 1000} s)`}`,
      );
      if (second) send(second, { type: 'registered', success: true });
    }
    return { instanceId, checks, passed: passed() };
  } finally {
    for (const c of conns) c.ws.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
}
