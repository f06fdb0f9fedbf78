/**
 * Create a task: kind, prompt, computer, allowed commands, and — when the server offers per-task settings — models per
 * role, temperature, executor mode and budgets. Empty fields are left out, so the task kind's configuration applies.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { useFeatures, VIEWER_NOTE } from '../features.js';
import { navigate } from '../router.js';
import type { WireClient } from '../wire.js';
import { NumberField } from './fields.js';

const ROLES = ['planner', 'executor', 'native', 'chat'] as const;

function num(v: string): number | undefined {
  if (v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** New task page. */
export function NewTaskPage() {
  const f = useFeatures();
  const [clients, setClients] = useState<WireClient[]>([]);
  const [kind, setKind] = useState('');
  const [prompt, setPrompt] = useState('');
  const [client, setClient] = useState('');
  const [commands, setCommands] = useState('');
  const [models, setModels] = useState<Record<string, string>>({});
  const [temperature, setTemperature] = useState('');
  const [mode, setMode] = useState('');
  const [maxSteps, setMaxSteps] = useState('');
  const [maxToolCalls, setMaxToolCalls] = useState('');
  const [deadlineMin, setDeadlineMin] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const settingsOn = f.features.includes('task_settings');

  useEffect(() => {
    api
      .clients()
      .then((r) => setClients(r.clients))
      .catch(() => setClients([]));
  }, []);
  useEffect(() => {
    if (kind === '' && f.taskKinds.length > 0) setKind(f.taskKinds[0]!);
  }, [f.taskKinds]);

  const submit = (e: Event): void => {
    e.preventDefault();
    const body: Record<string, unknown> = { task_kind: kind.trim(), prompt };
    if (client !== '') body.client_id = client;
    const cmds = commands
      .split(/[,\s]+/)
      .map((c) => c.trim())
      .filter((c) => c !== '');
    if (cmds.length > 0) body.allowed_commands = cmds;
    if (settingsOn) {
      const settings: Record<string, unknown> = {};
      const m = Object.fromEntries(Object.entries(models).filter(([, v]) => v.trim() !== ''));
      if (Object.keys(m).length > 0) settings.models = m;
      const temp = num(temperature);
      if (temp !== undefined) settings.temperature = temp;
      if (mode !== '') settings.executor_mode = mode;
      const budgets: Record<string, number> = {};
      const ms = num(maxSteps);
      const mt = num(maxToolCalls);
      const dl = num(deadlineMin);
      if (ms !== undefined) budgets.max_steps = ms;
      if (mt !== undefined) budgets.max_tool_calls = mt;
      if (dl !== undefined) budgets.deadline_ms = Math.round(dl * 60_000);
      if (Object.keys(budgets).length > 0) settings.budgets = budgets;
      if (Object.keys(settings).length > 0) body.settings = settings;
    }
    setBusy(true);
    setError(undefined);
    api
      .create(body)
      .then((r) => navigate(`/tasks/${encodeURIComponent(r.task.id)}`))
      .catch((x: unknown) => setError(x instanceof ApiError ? x.message : String(x)))
      .finally(() => setBusy(false));
  };

  return (
    <section class="page" aria-labelledby="new-h">
      <h1 id="new-h">New task</h1>
      {f.role === 'viewer' && (
        <p class="note" role="status">
          {VIEWER_NOTE}
        </p>
      )}
      <form class="form" onSubmit={submit}>
        <label>
          Kind
          <input
            name="kind"
            list="kinds"
            value={kind}
            onInput={(e) => setKind(e.currentTarget.value)}
            required
            placeholder="e.g. default"
          />
          <datalist id="kinds">
            {f.taskKinds.map((k) => (
              <option value={k} key={k} />
            ))}
          </datalist>
        </label>
        <label>
          Prompt
          <textarea
            name="prompt"
            rows={5}
            value={prompt}
            onInput={(e) => setPrompt(e.currentTarget.value)}
            required
          />
        </label>
        <label>
          Computer
          <select name="client" value={client} onChange={(e) => setClient(e.currentTarget.value)}>
            <option value="">any computer that offers the command</option>
            {clients.map((c) => (
              <option value={c.client_id} key={c.client_id}>
                {c.client_id}
                {c.connected ? ' (connected)' : ' (offline)'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Allowed commands{' '}
          <span class="muted">(optional, comma-separated; empty = what the kind allows)</span>
          <input name="commands" value={commands} onInput={(e) => setCommands(e.currentTarget.value)} />
        </label>
        <fieldset disabled={!settingsOn}>
          <legend>
            Settings for this task{' '}
            {!settingsOn && <span class="muted">(this server does not take per-task settings yet)</span>}
          </legend>
          <div class="grid2">
            {ROLES.map((r) => (
              <label key={r}>
                {r} model
                <input
                  name={`model-${r}`}
                  value={models[r] ?? ''}
                  onInput={(e) => setModels({ ...models, [r]: e.currentTarget.value })}
                  placeholder="kind default"
                />
              </label>
            ))}
            <NumberField
              label="Temperature"
              name="temperature"
              mode="decimal"
              value={temperature}
              set={setTemperature}
              placeholder="0 – 2"
            />
            <label>
              Executor mode
              <select name="mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
                <option value="">kind default</option>
                <option value="parser">parser</option>
                <option value="model">model</option>
                <option value="parser-then-model">parser-then-model</option>
              </select>
            </label>
            <NumberField
              label="Max steps"
              name="max-steps"
              mode="numeric"
              value={maxSteps}
              set={setMaxSteps}
            />
            <NumberField
              label="Max tool calls"
              name="max-tool-calls"
              mode="numeric"
              value={maxToolCalls}
              set={setMaxToolCalls}
            />
            <NumberField
              label="Deadline (minutes)"
              name="deadline"
              mode="decimal"
              value={deadlineMin}
              set={setDeadlineMin}
            />
          </div>
        </fieldset>
        {error !== undefined && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy || f.role === 'viewer'}>
          {busy ? 'Creating…' : 'Create task'}
        </button>
      </form>
    </section>
  );
}
