/**
 * Minecraft (seed 003's UI, on the orchestrator's `/api/minecraft` routes): the mod instances with their connection,
 * version and last state; a form that starts a `minecraft_agent` task on an instance with its settings (plan mode,
 * provider, model, temperature, LM Studio URL); Stop (sends `stop` to the mod and cancels its tasks); the Minecraft
 * tasks with their status and Retry for a failed or cancelled one. The task's step log is the ordinary task page;
 * an instance's live page (state, mod log, actions) is `#/minecraft/<id>` (minecraft-instance.tsx). Instances follow
 * the live stream's `mc_instance` records, tasks its `task` records; both are fetched again after a `resync`.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api.js';
import { live } from '../events.js';
import { age, statusText } from '../format.js';
import { navigate } from '../router.js';
import { Line, visible } from '../text.js';
import type { WireTask } from '../wire.js';
import { NumberField } from './fields.js';

/** A mod instance as `GET /api/minecraft/instances` sends it. */
interface WireMcInstance {
  instance_id: string;
  status: string;
  connected: boolean;
  /** The game version the mod reported (`register.version`). */
  version: string;
  /** The mod protocol version (absent from servers before it was reported). */
  protocol_version?: string;
  platform?: string | null;
  last_state: McState | null;
  last_state_at: number | null;
  open_action_id: string | null;
  connected_at: number;
  disconnected_at: number | null;
  state_updates: number;
}

/** The mod protocol's `state_update` data (only what this page shows). */
interface McState {
  position?: { x: number; y: number; z: number };
  health?: number;
  hunger?: number;
  dimension?: string;
  gameMode?: string;
  inventory?: Array<{ slot: number; item: string; count: number }>;
}

const MODES = ['hybrid', 'high-level', 'low-level'] as const;
const ENDED = new Set(['failed', 'cancelled']);
const UNFINISHED = new Set(['queued', 'running', 'waiting_for_command', 'waiting_for_user']);

const mc = {
  instances: () => request<{ instances: WireMcInstance[] }>('/api/minecraft/instances'),
  tasks: () => request<{ tasks: WireTask[] }>('/api/tasks?kind=minecraft_agent&limit=20'),
  create: (body: Record<string, unknown>) =>
    request<{ task: WireTask }>('/api/minecraft/tasks', { method: 'POST', body }),
  stop: (id: string) =>
    request<{ stop_sent: boolean; cancelled_tasks: string[] }>(
      `/api/minecraft/instances/${encodeURIComponent(id)}/stop`,
      { method: 'POST', body: {} },
    ),
  retry: (id: string) =>
    request<{ task: WireTask }>(`/api/minecraft/tasks/${encodeURIComponent(id)}/retry`, {
      method: 'POST',
      body: {},
    }),
};

function fixed(n: number | undefined): string {
  return n === undefined ? '?' : (Math.round(n * 10) / 10).toString();
}

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

/** Minecraft page. */
export function MinecraftPage({ now }: { now: number }) {
  const [instances, setInstances] = useState<WireMcInstance[] | undefined>(undefined);
  const [unavailable, setUnavailable] = useState<string | undefined>(undefined);
  const [tasks, setTasks] = useState<WireTask[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const loadInstances = (): void => {
    mc.instances()
      .then((r) => {
        setInstances(r.instances);
        setUnavailable(undefined);
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.code === 'minecraft_unavailable') setUnavailable(e.message);
        else setError(message(e));
      });
  };
  const loadTasks = (): void => {
    mc.tasks()
      .then((r) => setTasks(r.tasks))
      .catch((e: unknown) => setError(message(e)));
  };

  useEffect(() => {
    loadInstances();
    loadTasks();
    let pending: ReturnType<typeof setTimeout> | undefined;
    const off = live.on((e) => {
      if (e.type === 'mc_instance') {
        const next = e.data as WireMcInstance;
        setInstances((list) => {
          if (list === undefined) return list;
          const at = list.findIndex((x) => x.instance_id === next.instance_id);
          return at < 0 ? [...list, next] : list.map((x, n) => (n === at ? next : x));
        });
        return;
      }
      if (e.type === 'resync') loadInstances();
      if (e.type === 'task' && e.data.kind !== 'minecraft_agent') return;
      if (e.type !== 'task' && e.type !== 'resync') return;
      if (pending !== undefined) return;
      pending = setTimeout(() => {
        pending = undefined;
        loadTasks();
      }, 100);
    });
    return () => {
      off();
      if (pending !== undefined) clearTimeout(pending);
    };
  }, []);

  const stop = (id: string): void => {
    setError(undefined);
    mc.stop(id)
      .then((r) => {
        setNotice(
          `Stop ${r.stop_sent ? 'sent to' : 'could not reach'} ${id}; ${r.cancelled_tasks.length} task(s) cancelled.`,
        );
        loadInstances();
        loadTasks();
      })
      .catch((e: unknown) => setError(message(e)));
  };
  const retry = (id: string): void => {
    setError(undefined);
    mc.retry(id)
      .then((r) => navigate(`/tasks/${encodeURIComponent(r.task.id)}`))
      .catch((e: unknown) => setError(message(e)));
  };

  const instanceOf = (t: WireTask): string =>
    typeof t.metadata?.instanceId === 'string' ? t.metadata.instanceId : '';

  return (
    <section class="page" aria-labelledby="mc-h">
      <h1 id="mc-h">Minecraft</h1>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {notice !== undefined && (
        <p class="muted" role="status">
          {notice}
        </p>
      )}
      {unavailable !== undefined ? (
        <p class="muted" data-testid="mc-unavailable">
          {unavailable} (start it with <code>--mc-port</code>, see docs/minecraft.md).
        </p>
      ) : instances === undefined ? (
        <p>Loading…</p>
      ) : instances.length === 0 ? (
        <p class="muted">
          No mod or bridge has connected yet. Start one, e.g.{' '}
          <code>npx ccagent-mc-bridge --server HOST:25565 --username Bot</code>
        </p>
      ) : (
        <ul class="cards" aria-label="Minecraft instances">
          {instances.map((i) => {
            const s = i.last_state;
            const p = s?.position;
            return (
              <li class="card" key={i.instance_id} data-instance-id={i.instance_id}>
                <h2>
                  <span
                    class={`dot ${i.connected ? 'on' : i.status === 'disconnected' ? 'grace' : 'off'}`}
                    aria-hidden="true"
                  />
                  {visible(i.instance_id)}{' '}
                  <span class="muted instance-state">
                    {i.status} · protocol {visible(i.protocol_version ?? '1.0')} · Minecraft{' '}
                    {visible(i.version)}
                    {i.platform ? ` (${visible(i.platform)})` : ''}
                  </span>
                </h2>
                {s === null ? (
                  <p class="muted">no state yet</p>
                ) : (
                  <p class="mc-state">
                    at{' '}
                    <span data-testid="mc-position">
                      {p ? `${fixed(p.x)} ${fixed(p.y)} ${fixed(p.z)}` : '?'}
                    </span>{' '}
                    in {visible(s.dimension ?? '?')} ({visible(s.gameMode ?? '?')}) · health {fixed(s.health)}{' '}
                    · hunger {fixed(s.hunger)} · {s.inventory?.length ?? 0} inventory stacks
                    {i.last_state_at !== null && (
                      <span class="muted"> · {age(i.last_state_at, now)} ago</span>
                    )}
                  </p>
                )}
                <p>
                  <a href={`#/minecraft/${encodeURIComponent(i.instance_id)}`}>
                    Live view: state, mod log and actions
                  </a>
                </p>
                {i.open_action_id !== null && (
                  <p class="muted">
                    running action <code>{visible(i.open_action_id)}</code>
                  </p>
                )}
                <button
                  type="button"
                  class="danger small"
                  onClick={() => stop(i.instance_id)}
                  aria-label={`Stop ${i.instance_id}`}
                >
                  Stop
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {unavailable === undefined && <StartForm instances={instances ?? []} onError={setError} />}
      <h2>Minecraft tasks</h2>
      {tasks.length === 0 ? (
        <p class="muted">No Minecraft task yet.</p>
      ) : (
        <table class="tools mc-tasks">
          <thead>
            <tr>
              <th scope="col">task</th>
              <th scope="col">instance</th>
              <th scope="col">status</th>
              <th scope="col">prompt</th>
              <th scope="col">
                <span class="muted">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {tasks.map((t) => (
              <tr key={t.id} data-task-id={t.id}>
                <td>
                  <a href={`#/tasks/${encodeURIComponent(t.id)}`}>{t.id.slice(0, 8)}</a>
                </td>
                <td>{visible(instanceOf(t))}</td>
                <td>
                  <span class={`badge s-${t.status}`}>{statusText(t.status)}</span>
                  {t.error !== undefined && (
                    <span class="error small-text">
                      {' '}
                      <Line text={`${t.error.code}: ${t.error.message}`} max={120} />
                    </span>
                  )}
                </td>
                <td>
                  <Line text={t.prompt} max={80} />
                </td>
                <td>
                  {ENDED.has(t.status) && (
                    <button type="button" class="small" onClick={() => retry(t.id)}>
                      Retry
                    </button>
                  )}
                  {UNFINISHED.has(t.status) && instanceOf(t) !== '' && (
                    <button type="button" class="small danger" onClick={() => stop(instanceOf(t))}>
                      Stop
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The form that starts a `minecraft_agent` task; empty optional fields are left out (server defaults). */
function StartForm({
  instances,
  onError,
}: {
  instances: WireMcInstance[];
  onError: (e: string | undefined) => void;
}) {
  const [instance, setInstance] = useState('');
  const [prompt, setPrompt] = useState('');
  const [mode, setMode] = useState<string>('hybrid');
  const [provider, setProvider] = useState('ollama');
  const [model, setModel] = useState('');
  const [temperature, setTemperature] = useState('');
  const [lmStudioUrl, setLmStudioUrl] = useState('');
  const [busy, setBusy] = useState(false);
  const chosen = instance !== '' ? instance : (instances.find((i) => i.connected)?.instance_id ?? '');

  const submit = (e: Event): void => {
    e.preventDefault();
    const body: Record<string, unknown> = {
      instance_id: chosen,
      prompt,
      model: model.trim(),
      mode,
      provider,
    };
    if (temperature.trim() !== '') body.temperature = Number(temperature);
    if (provider === 'lmstudio' && lmStudioUrl.trim() !== '') body.lm_studio_url = lmStudioUrl.trim();
    setBusy(true);
    onError(undefined);
    mc.create(body)
      .then((r) => navigate(`/tasks/${encodeURIComponent(r.task.id)}`))
      .catch((x: unknown) => onError(message(x)))
      .finally(() => setBusy(false));
  };

  return (
    <form class="form" onSubmit={submit} aria-labelledby="mc-start-h">
      <h2 id="mc-start-h">Start a task</h2>
      <div class="grid2">
        <label>
          Instance
          <select
            name="instance"
            value={chosen}
            onChange={(e) => setInstance(e.currentTarget.value)}
            required
          >
            {chosen === '' && <option value="">no instance connected</option>}
            {instances.map((i) => (
              <option value={i.instance_id} key={i.instance_id}>
                {i.instance_id} ({i.status})
              </option>
            ))}
          </select>
        </label>
        <label>
          Plan mode
          <select name="mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
            {MODES.map((m) => (
              <option value={m} key={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <label>
          Provider
          <select name="provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            <option value="ollama">Ollama</option>
            <option value="lmstudio">LM Studio (OpenAI-compatible)</option>
          </select>
        </label>
        <label>
          Model
          <input
            name="model"
            value={model}
            onInput={(e) => setModel(e.currentTarget.value)}
            required
            placeholder="e.g. qwen3:8b"
          />
        </label>
        <NumberField
          label="Temperature"
          name="temperature"
          mode="decimal"
          value={temperature}
          set={setTemperature}
          placeholder="0 – 2"
        />
        {provider === 'lmstudio' && (
          <label>
            LM Studio URL
            <input
              name="lm-studio-url"
              value={lmStudioUrl}
              onInput={(e) => setLmStudioUrl(e.currentTarget.value)}
              placeholder="http://localhost:1234/v1"
            />
          </label>
        )}
      </div>
      <label>
        Prompt
        <textarea
          name="prompt"
          rows={3}
          value={prompt}
          onInput={(e) => setPrompt(e.currentTarget.value)}
          required
        />
      </label>
      <button type="submit" class="primary" disabled={busy || chosen === ''}>
        {busy ? 'Starting…' : 'Start'}
      </button>
    </form>
  );
}
