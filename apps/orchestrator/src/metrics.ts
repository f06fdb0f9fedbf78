/**
 * Prometheus metrics (`GET /metrics`) with prom-client, in a registry owned by one orchestrator instance (so
 * several can run in one process, e.g. in tests).
 */
import type { Engine, StoredStep, TaskStatus } from '@ccagent/engine';
import { TASK_STATUSES } from '@ccagent/engine';
import type { PoolSnapshot } from '@ccagent/models';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The pools of servers to report, read when scraped. */
export type PoolSource = () => Array<{ name: string; snapshot: PoolSnapshot }>;

const MAX_COMMAND_LABELS = 100;

/** The orchestrator's metrics. */
export class Metrics {
  /** The registry `/metrics` renders. */
  readonly registry = new Registry();
  private readonly taskCounts = new Map<TaskStatus, number>();
  private readonly tasks: Gauge;
  private readonly modelLatency: Histogram;
  private readonly modelTokens: Counter;
  private readonly commandRoundTrip: Histogram;
  private readonly connected: Gauge;
  private readonly pendingCalls: Gauge;
  private readonly wsIn: Counter;
  private readonly wsErrors: Counter;
  private readonly httpRequests: Counter;
  private readonly commandLabels = new Set<string>();

  constructor(connectedClients: () => number, pendingCalls: () => number = () => 0) {
    collectDefaultMetrics({ register: this.registry });
    const counts = this.taskCounts;
    this.tasks = new Gauge({
      name: 'ccagent_tasks',
      help: 'Tasks in the database by status.',
      labelNames: ['status'],
      registers: [this.registry],
      collect() {
        for (const s of TASK_STATUSES) this.set({ status: s }, counts.get(s) ?? 0);
      },
    });
    this.modelLatency = new Histogram({
      name: 'ccagent_model_call_duration_seconds',
      help: 'Duration of model calls (one chat request, retries included), by model and role.',
      labelNames: ['model', 'kind'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [this.registry],
    });
    this.modelTokens = new Counter({
      name: 'ccagent_model_tokens_total',
      help: 'Tokens reported by the model server, by model, role and direction (prompt|completion).',
      labelNames: ['model', 'kind', 'direction'],
      registers: [this.registry],
    });
    this.commandRoundTrip = new Histogram({
      name: 'ccagent_command_round_trip_seconds',
      help: 'Time from sending a command_call to receiving its command_result, by command.',
      labelNames: ['command'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [this.registry],
    });
    this.connected = new Gauge({
      name: 'ccagent_connected_clients',
      help: 'CC clients with a welcomed WebSocket connection.',
      registers: [this.registry],
      collect() {
        this.set(connectedClients());
      },
    });
    this.pendingCalls = new Gauge({
      name: 'ccagent_pending_command_calls',
      help: 'Command calls handed to a client (or waiting for one) whose result is not recorded yet.',
      registers: [this.registry],
      collect() {
        this.set(pendingCalls());
      },
    });
    this.wsIn = new Counter({
      name: 'ccagent_ws_messages_received_total',
      help: 'Valid WebSocket messages received, by type.',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.wsErrors = new Counter({
      name: 'ccagent_ws_errors_sent_total',
      help: 'Protocol `error` messages sent to clients, by code.',
      labelNames: ['code'],
      registers: [this.registry],
    });
    this.httpRequests = new Counter({
      name: 'ccagent_http_requests_total',
      help: 'HTTP requests by route and status.',
      labelNames: ['route', 'status'],
      registers: [this.registry],
    });
  }

  /**
   * Report every pool server when scraped: `ccagent_model_server_*{pool, server}` — up, concurrency, in flight,
   * queued, calls, failures, failovers, queue wait, cache-affinity hits and misses and their ratio.
   */
  trackPools(source: PoolSource): void {
    const rows = (): Array<{
      labels: { pool: string; server: string };
      s: PoolSnapshot['servers'][number];
    }> =>
      source().flatMap(({ name, snapshot }) =>
        snapshot.servers.map((s) => ({ labels: { pool: name, server: s.name }, s })),
      );
    const labelNames = ['pool', 'server'];
    const gauge = (
      name: string,
      help: string,
      value: (s: PoolSnapshot['servers'][number]) => number | undefined,
    ): void => {
      new Gauge({
        name,
        help,
        labelNames,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const { labels, s } of rows()) {
            const v = value(s);
            if (v !== undefined) this.set(labels, v);
          }
        },
      });
    };
    const counter = (
      name: string,
      help: string,
      value: (s: PoolSnapshot['servers'][number]) => number,
    ): void => {
      new Counter({
        name,
        help,
        labelNames,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const { labels, s } of rows()) this.inc(labels, value(s));
        },
      });
    };
    gauge('ccagent_model_server_up', 'Pool server taking calls (1) or out until a probe answers (0).', (s) =>
      s.state === 'up' ? 1 : 0,
    );
    gauge('ccagent_model_server_concurrency', 'Calls a pool server is sent at once.', (s) => s.concurrency);
    gauge('ccagent_model_server_in_flight', 'Calls running on a pool server.', (s) => s.inFlight);
    gauge('ccagent_model_server_queued', 'Calls waiting in the pool for this server.', (s) => s.queued);
    counter('ccagent_model_server_calls_total', 'Calls started on a pool server.', (s) => s.calls);
    counter('ccagent_model_server_failures_total', 'Calls that failed on a pool server.', (s) => s.failures);
    counter(
      'ccagent_model_server_failovers_total',
      'Calls that failed on a pool server and were sent to another.',
      (s) => s.failovers,
    );
    counter(
      'ccagent_model_server_queue_wait_seconds_total',
      'Queue wait of the calls started on a pool server, summed.',
      (s) => s.waitMsTotal / 1000,
    );
    gauge(
      'ccagent_model_server_queue_wait_max_seconds',
      'Longest queue wait of a call on a pool server.',
      (s) => s.waitMsMax / 1000,
    );
    counter(
      'ccagent_model_server_affinity_hits_total',
      'Calls of a known task that ran on the server that served its previous call.',
      (s) => s.affinityHits,
    );
    counter(
      'ccagent_model_server_affinity_misses_total',
      'Calls of a known task that had to leave the server that served its previous call.',
      (s) => s.affinityMisses,
    );
    gauge(
      'ccagent_model_server_affinity_hit_ratio',
      'Affinity hits / (hits + misses) of a pool server (absent before any).',
      (s) => s.affinityHitRate,
    );
  }

  /** Count existing tasks at startup, then follow the engine's events. */
  async track(engine: Engine): Promise<void> {
    for (const t of await engine.listTasks())
      this.taskCounts.set(t.status, (this.taskCounts.get(t.status) ?? 0) + 1);
    engine.on('taskCreated', ({ task }) => this.bump(task.status, 1));
    engine.on('taskUpdated', ({ task, previousStatus }) => {
      if (task.status === previousStatus) return;
      this.bump(previousStatus, -1);
      this.bump(task.status, 1);
    });
    engine.on('stepLogged', ({ step }) => this.modelStep(step));
  }

  private bump(status: TaskStatus, by: number): void {
    this.taskCounts.set(status, Math.max(0, (this.taskCounts.get(status) ?? 0) + by));
  }

  private modelStep(step: StoredStep): void {
    if (step.model === undefined) return;
    const labels = { model: step.model, kind: step.kind };
    if (step.durationMs !== undefined) this.modelLatency.observe(labels, step.durationMs / 1000);
    const u = step.usage;
    if (u?.promptTokens !== undefined)
      this.modelTokens.inc({ ...labels, direction: 'prompt' }, u.promptTokens);
    if (u?.completionTokens !== undefined) {
      this.modelTokens.inc({ ...labels, direction: 'completion' }, u.completionTokens);
    }
  }

  /** A command result arrived `ms` after its call was sent. */
  commandRoundTripMs(command: string, ms: number): void {
    // Command names come from clients: cap the label's cardinality so a client cannot bloat the registry.
    if (!this.commandLabels.has(command) && this.commandLabels.size < MAX_COMMAND_LABELS)
      this.commandLabels.add(command);
    this.commandRoundTrip.observe(
      { command: this.commandLabels.has(command) ? command : 'other' },
      ms / 1000,
    );
  }

  /** A valid message of `type` was received. */
  messageIn(type: string): void {
    this.wsIn.inc({ type });
  }

  /** An `error` with `code` was sent. */
  errorOut(code: string): void {
    this.wsErrors.inc({ code });
  }

  /** An HTTP request finished. */
  http(route: string, status: number): void {
    this.httpRequests.inc({ route, status: String(status) });
  }

  /** Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** Content type of {@link render}. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
