// The orchestrator side of the end-to-end tier: the BUILT `cc-orchestrator serve` (spawned through the
// orchestrator's own process-test helper), a temp SQLite file and config, and the scripted fake model server from
// @ccagent/testkit. The CC side is a real CraftOS-PC computer (../craftos/craftos.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { serve, type Served } from '../../../apps/orchestrator/test/support/spawn.js';
import { findCraftos } from '../craftos/craftos.js';

/** The emulator, or undefined: the tier is then skipped with the notice below. */
export const craftos = findCraftos();
if (!craftos) {
  console.log(
    '[lua-client.e2e] SKIPPED: CraftOS-PC not found (set CRAFTOS_PC_DIR or provide ../shared/craftos; ' +
      'see docs/lua-client.md)',
  );
}

/** Model names of the three roles (distinct, so each test scripts exactly the role it drives). */
export const MODELS = { planner: 'e2e-planner', executor: 'e2e-executor', native: 'e2e-native' } as const;

type Json = Record<string, unknown>;

/** A task as `GET /api/tasks/:id` returns it. */
export interface TaskDetail {
  task: Json & { id: string; status: string; result?: Json; error?: Json };
  steps: Array<Json & { kind: string }>;
  history: Array<Json & { type: string }>;
  command_calls: Array<
    Json & {
      call_id: string;
      command: string;
      status: string;
      dispatch_count: number;
      args: Json;
      outcome?: { ok: boolean; result?: Json; error?: Json };
    }
  >;
  questions: Array<Json & { question: string; answer?: string }>;
}

/** Options of {@link Stack.start}. */
export interface StackOptions {
  /** Merged into the config file (taskKinds, server …); models are always the three {@link MODELS}. */
  config?: Json;
  /** Start with `--token`; HTTP calls of this class then send it as a bearer token. */
  token?: string;
  /**
   * A real model server (the real-model tier): its URL and the `models` section to use with it. The scripted fake
   * still starts (it answers nothing then) so `stack.fake` always exists.
   */
  modelServer?: { url: string; models: Json };
}

/** One orchestrator process (restartable on the same DB and port) and its fake model server. */
export class Stack {
  private served: Served | undefined;

  private constructor(
    readonly dir: string,
    readonly fake: FakeOllama,
    private readonly args: string[],
    private readonly token: string | undefined,
  ) {}

  /** Start the fake model server and the built orchestrator on an ephemeral port. */
  static async start(opts: StackOptions = {}): Promise<Stack> {
    const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-e2e-'));
    // Listed as installed from the start: the orchestrator caches its model check for 10 s.
    const fake = await startFakeOllama({ installed: Object.values(MODELS) });
    const config = path.join(dir, 'ccagent.json');
    writeFileSync(
      config,
      JSON.stringify({
        models: opts.modelServer?.models ?? {
          planner: { name: MODELS.planner },
          executor: { name: MODELS.executor },
          native: { name: MODELS.native },
        },
        ...opts.config,
      }),
    );
    const args = [
      '--db',
      path.join(dir, 'ccagent.db'),
      '--ollama-url',
      opts.modelServer?.url ?? fake.url,
      '--config',
      config,
      '--log-level',
      'warn',
      ...(opts.token !== undefined ? ['--token', opts.token] : []),
    ];
    const stack = new Stack(dir, fake, args, opts.token);
    await stack.launch('0');
    return stack;
  }

  private async launch(port: string): Promise<void> {
    this.served = await serve(['--port', port, ...this.args]);
  }

  private get s(): Served {
    if (!this.served) throw new Error('the orchestrator is not running');
    return this.served;
  }

  /** `http://127.0.0.1:PORT`. */
  get url(): string {
    return this.s.url;
  }

  /** The WebSocket URL CC clients connect to. */
  get wsUrl(): string {
    return `${this.url.replace(/^http/, 'ws')}/ws`;
  }

  /** Everything the orchestrator printed (stdout + JSON logs on stderr), for failure messages. */
  output(): string {
    return this.served ? `${this.served.stdout()}\n${this.served.stderr()}` : '(not running)';
  }

  /** SIGKILL the orchestrator (no graceful shutdown: sockets just drop). */
  async kill9(): Promise<void> {
    await this.s.kill9();
    this.served = undefined;
  }

  /** Start it again on the same port and database; returns its startup output. */
  async restart(port: string): Promise<string> {
    await this.launch(port);
    return this.s.stdout();
  }

  private headers(): Record<string, string> {
    return this.token !== undefined ? { authorization: `Bearer ${this.token}` } : {};
  }

  /** GET a JSON route. */
  async get<T>(route: string): Promise<T> {
    const res = await fetch(`${this.url}${route}`, { headers: this.headers() });
    if (!res.ok) throw new Error(`GET ${route}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  /** The value of one Prometheus sample of `GET /metrics` (0 when absent). */
  async metric(sample: string): Promise<number> {
    const text = await (await fetch(`${this.url}/metrics`, { headers: this.headers() })).text();
    const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line ? Number(line.slice(sample.length + 1)) : 0;
  }

  /** POST a JSON body; returns the status and the parsed reply. */
  async post<T>(route: string, body: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${this.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.headers() },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** A task with its steps, history, command calls and questions. */
  task(id: string): Promise<TaskDetail> {
    return this.get<TaskDetail>(`/api/tasks/${id}`);
  }

  /** Poll until `check` holds (50 ms steps), or throw with what was last seen. */
  async until<T>(what: string, probe: () => Promise<T>, check: (v: T) => boolean, ms = 20_000): Promise<T> {
    const end = Date.now() + ms;
    let last: T | undefined;
    while (Date.now() < end) {
      last = await probe();
      if (check(last)) return last;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 2000)}`);
  }

  /** The SQLite file the orchestrator writes (for the CLI, which reads it read-only). */
  get db(): string {
    return path.join(this.dir, 'ccagent.db');
  }

  /** Stop the orchestrator and the fake, delete the temp dir. */
  async close(): Promise<void> {
    if (this.served) await this.served.kill9();
    this.served = undefined;
    await this.fake.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
