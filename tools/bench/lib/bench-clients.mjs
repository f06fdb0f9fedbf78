// Simulated CC computers for the benchmarks (real `ws` sockets), and the bare echo clients of the raw baseline.
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

/** The one command bench clients register. */
export const BENCH_COMMANDS = [{ name: 'noop', args_schema: { type: 'object' } }];

function open(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * A simulated CC computer on a real `ws` socket: says hello with {@link BENCH_COMMANDS}, waits for the welcome, answers
 * heartbeats, and hands every other server message to `onServerMessage(m, now)` (`now`: `performance.now()` when the
 * message arrived, taken before parsing). Subclasses give the protocol; `onClosed()` runs when the socket closes.
 */
export class SimulatedComputer {
  constructor(url, clientId) {
    this.url = `${url.replace(/^http/, 'ws')}/ws`;
    this.clientId = clientId;
    this.ws = undefined;
    this.closed = false;
  }

  async connect() {
    const ws = await open(this.url);
    this.ws = ws;
    this.closed = false;
    ws.on('error', () => {});
    ws.on('close', () => {
      this.closed = true;
      this.onClosed();
    });
    // One listener from the start: messages that arrive in the same read as the welcome (re-sent calls after a
    // restart) must not slip through between two listeners.
    const welcomed = new Promise((resolve, reject) => {
      this.onWelcome = (m) =>
        m.type === 'welcome' ? resolve() : reject(new Error(`hello refused: ${JSON.stringify(m)}`));
    });
    ws.on('message', (data) => this.onMessage(data));
    ws.send(
      JSON.stringify({
        type: 'hello',
        client_id: this.clientId,
        protocol_version: 1,
        commands: BENCH_COMMANDS,
      }),
    );
    await welcomed;
  }

  send(msg) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  onMessage(data) {
    const now = performance.now();
    const m = JSON.parse(data.toString());
    if (this.onWelcome) {
      const w = this.onWelcome;
      this.onWelcome = undefined;
      w(m);
      return;
    }
    if (m.type === 'ping') {
      this.send({ type: 'pong', ...(m.id !== undefined ? { id: m.id } : {}) });
      return;
    }
    this.onServerMessage(m, now);
  }

  /** A server message other than the welcome and heartbeats. */
  onServerMessage(_m, _now) {}

  /** The socket closed. */
  onClosed() {}

  terminate() {
    this.ws?.terminate();
  }
}

/**
 * A simulated computer for the round-trip benchmarks. Modes: `idle` (answers heartbeats only), `loop` (runs
 * `bench_loop` tasks back to back and answers every command_call at once, timestamping each step), `hold` (records
 * command_calls, answers nothing).
 */
export class BenchClient extends SimulatedComputer {
  constructor(url, clientId, shared) {
    super(url, clientId);
    this.shared = shared; // { measuring, samples: { cycle, modelCycle, ack } }
    this.mode = 'idle';
    this.taskSeq = 0;
    this.currentTask = undefined;
    this.lastCall = undefined; // { taskId, at }
    this.sentAt = new Map(); // call_id → when the result was sent
    this.calls = new Map(); // call_id → times received (hold mode)
    this.completed = 0;
  }

  /** Start running tasks back to back. */
  startLoop() {
    this.mode = 'loop';
    this.createTask();
  }

  stop() {
    this.mode = 'idle';
  }

  createTask(prompt = 'loop') {
    const requestId = `${this.clientId}-${this.taskSeq++}`;
    this.send({
      type: 'create_task',
      request_id: requestId,
      task_kind: 'bench_loop',
      client_id: this.clientId,
      prompt,
      allowed_commands: [],
    });
  }

  onServerMessage(m, now) {
    switch (m.type) {
      case 'command_call': {
        if (this.mode === 'hold') {
          this.calls.set(m.call_id, (this.calls.get(m.call_id) ?? 0) + 1);
          this.shared.onHoldCall?.(this, m);
          return;
        }
        if (this.mode !== 'loop') return;
        const s = this.shared;
        if (s.measuring && this.lastCall && this.lastCall.taskId === m.task_id) {
          // command_call → (instant) command_result → next command_call of the same task.
          (m.args?.i > 0 ? s.samples.cycle : s.samples.modelCycle).push(now - this.lastCall.at);
        }
        this.lastCall = { taskId: m.task_id, at: now };
        this.sentAt.set(m.call_id, performance.now());
        this.send({
          type: 'command_result',
          task_id: m.task_id,
          call_id: m.call_id,
          ok: true,
          result: { ok: true },
        });
        return;
      }
      case 'command_ack': {
        const t = this.sentAt.get(m.call_id);
        this.sentAt.delete(m.call_id);
        if (t !== undefined && this.shared.measuring) this.shared.samples.ack.push(now - t);
        return;
      }
      case 'task_completed':
      case 'task_failed':
        this.completed++;
        if (m.type === 'task_failed') this.shared.failed = (this.shared.failed ?? 0) + 1;
        this.lastCall = undefined;
        if (this.mode === 'loop') this.createTask();
        return;
      default:
    }
  }
}

/** A bare echo client: sends a fixed message and, when it comes back, records the round trip and sends again. */
export class EchoClient {
  constructor(url, shared, payload) {
    this.url = url;
    this.shared = shared; // { measuring, samples: number[], running }
    this.payload = payload;
    this.sentAt = 0;
    this.running = false;
  }

  async connect() {
    this.ws = await open(this.url);
    this.ws.on('error', () => {});
    this.ws.on('message', () => {
      const now = performance.now();
      if (this.shared.measuring) this.shared.samples.push(now - this.sentAt);
      if (this.running) this.ping();
    });
  }

  ping() {
    this.sentAt = performance.now();
    this.ws.send(this.payload);
  }

  start() {
    this.running = true;
    this.ping();
  }

  stop() {
    this.running = false;
  }

  terminate() {
    this.ws?.terminate();
  }
}

/** Connect `clients` in batches (`connect()` each), bounded concurrency so the server's accept queue keeps up. */
export async function connectAll(clients, batch = 250) {
  for (let i = 0; i < clients.length; i += batch) {
    await Promise.all(clients.slice(i, i + batch).map((c) => c.connect()));
  }
}
