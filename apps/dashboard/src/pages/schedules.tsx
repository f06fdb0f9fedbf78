/**
 * Schedules (`/api/schedules`): every durable schedule with when it fires next, what it does (a task from a template,
 * or an event to a running task by its id or to an agent by its name, resolved at each firing), its missed-firing
 * policy and whether it is paused, and the latest firings. An operator adds, pauses, resumes and removes schedules
 * here; a viewer key sees the same list with every action disabled (the server refuses them anyway). Everything a
 * schedule holds is shown as inert text.
 */
import type { HttpSchedule } from '@ccagent/protocol';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api.js';
import { live } from '../events.js';
import { useFeatures, VIEWER_NOTE } from '../features.js';
import { age, when } from '../format.js';
import { asText, visible } from '../text.js';
import './schedules.css';

interface Firing {
  schedule_id: string;
  due_at: number;
  fired_at: number;
  status: string;
  task_id?: string;
  error?: string;
}

interface SchedulesPage {
  schedules: HttpSchedule[];
  firings: Firing[];
}

const schedulesApi = {
  list: () => request<SchedulesPage>('/api/schedules'),
  add: (body: Record<string, unknown>) =>
    request<{ schedule: HttpSchedule }>('/api/schedules', { method: 'POST', body }),
  act: (id: string, action: 'pause' | 'resume' | 'remove') =>
    request<unknown>(`/api/schedules/${encodeURIComponent(id)}/${action}`, { method: 'POST', body: {} }),
};

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

/** "every 90 s" / "cron 0 7 * * * (Europe/Berlin)". */
function cadence(s: HttpSchedule): string {
  if (s.every_ms !== undefined) {
    const sec = s.every_ms / 1000;
    return sec % 3600 === 0
      ? `every ${sec / 3600} h`
      : sec % 60 === 0
        ? `every ${sec / 60} min`
        : `every ${sec} s`;
  }
  return `cron ${s.cron ?? ''} (${s.timezone ?? 'UTC'})`;
}

function Target({ s }: { s: HttpSchedule }) {
  const t = s.task as { task_kind?: string; client_id?: string | null; prompt?: string } | undefined;
  if (t !== undefined) {
    return (
      <>
        new <code>{visible(asText(t.task_kind))}</code> task
        {t.client_id ? (
          <>
            {' '}
            on <code>{visible(t.client_id)}</code>
          </>
        ) : null}
        <span class="schedule-prompt">{visible(asText(t.prompt))}</span>
      </>
    );
  }
  const e = s.event as { task_id?: string; agent?: string; name?: string } | undefined;
  return (
    <>
      event <code>{visible(asText(e?.name))}</code> to{' '}
      {e?.agent !== undefined ? (
        <>agent {visible(asText(e.agent))}</>
      ) : (
        <>
          task <a href={`#/tasks/${encodeURIComponent(asText(e?.task_id))}`}>{visible(asText(e?.task_id))}</a>
        </>
      )}
    </>
  );
}

/** Schedules page. */
export function SchedulesPage({ now }: { now: number }) {
  const f = useFeatures();
  const viewer = f.role === 'viewer';
  const [data, setData] = useState<SchedulesPage | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [confirm, setConfirm] = useState<string | undefined>(undefined);

  const load = (): void => {
    schedulesApi
      .list()
      .then((d) => {
        setData(d);
        setError(undefined);
      })
      .catch((e: unknown) => setError(message(e)));
  };
  useEffect(() => {
    load();
    // Every change and firing is a `schedule` record on the live stream (all go through the serving process).
    return live.on((e) => {
      if (e.type === 'schedule' || e.type === 'resync') load();
    });
  }, []);

  const act = (id: string, action: 'pause' | 'resume' | 'remove'): void => {
    setBusy(id);
    setConfirm(undefined);
    schedulesApi
      .act(id, action)
      .then(load)
      .catch((e: unknown) => setError(message(e)))
      .finally(() => setBusy(undefined));
  };

  return (
    <section class="page" aria-labelledby="sched-h">
      <h1 id="sched-h">Schedules</h1>
      {viewer && (
        <p class="note" role="status">
          {VIEWER_NOTE}
        </p>
      )}
      {error !== undefined && (
        <p class="error" role="alert">
          {visible(error)}
        </p>
      )}
      {data === undefined ? (
        error === undefined && <p>Loading…</p>
      ) : data.schedules.length === 0 ? (
        <p class="muted">No schedule yet.</p>
      ) : (
        <table class="schedules" aria-label="Schedules">
          <thead>
            <tr>
              <th scope="col">schedule</th>
              <th scope="col">when</th>
              <th scope="col">next firing</th>
              <th scope="col">missed</th>
              <th scope="col">does</th>
              <th scope="col">actions</th>
            </tr>
          </thead>
          <tbody>
            {data.schedules.map((s) => (
              <tr key={s.id} data-schedule-id={s.id} class={s.paused ? 'paused' : undefined}>
                <td>
                  <code>{visible(s.id)}</code>
                  {s.name !== undefined && <div class="schedule-name">{visible(s.name)}</div>}
                </td>
                <td>{visible(cadence(s))}</td>
                <td class="next">
                  {s.paused ? (
                    <span class="badge s-paused">paused</span>
                  ) : s.next_due_at !== undefined ? (
                    <span title={when(s.next_due_at)}>
                      {s.next_due_at <= now ? 'due now' : `in ${age(now, s.next_due_at)}`}
                    </span>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
                <td>{s.missed === 'run_once' ? 'run once' : 'skip'}</td>
                <td class="target">
                  <Target s={s} />
                </td>
                <td class="row-actions">
                  <button
                    type="button"
                    class="small"
                    disabled={viewer || busy === s.id}
                    onClick={() => act(s.id, s.paused ? 'resume' : 'pause')}
                  >
                    {s.paused ? 'Resume' : 'Pause'}
                  </button>{' '}
                  {confirm === s.id ? (
                    <button
                      type="button"
                      class="small danger"
                      disabled={viewer || busy === s.id}
                      onClick={() => act(s.id, 'remove')}
                    >
                      Really remove
                    </button>
                  ) : (
                    <button
                      type="button"
                      class="small"
                      disabled={viewer || busy === s.id}
                      onClick={() => setConfirm(s.id)}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data !== undefined && data.firings.length > 0 && <Firings firings={data.firings} now={now} />}
      <AddSchedule disabled={viewer} kinds={f.taskKinds} onAdded={load} />
    </section>
  );
}

function Firings({ firings, now }: { firings: Firing[]; now: number }) {
  return (
    <details class="firings">
      <summary>Latest firings ({firings.length})</summary>
      <ul>
        {firings.map((x) => (
          <li key={`${x.schedule_id}@${x.due_at}`}>
            <code>{visible(x.schedule_id)}</code> {age(x.fired_at, now)} ago:{' '}
            <span class={`badge f-${x.status}`}>{x.status}</span>
            {x.task_id !== undefined && (
              <>
                {' '}
                <a href={`#/tasks/${encodeURIComponent(x.task_id)}`}>{visible(x.task_id)}</a>
              </>
            )}
            {x.error !== undefined && <span class="error"> {visible(x.error)}</span>}
          </li>
        ))}
      </ul>
    </details>
  );
}

function AddSchedule({
  disabled,
  kinds,
  onAdded,
}: {
  disabled: boolean;
  kinds: string[];
  onAdded: () => void;
}) {
  const [form, setForm] = useState<Record<string, string>>({
    mode: 'every',
    target: 'task',
    missed: 'run_once',
  });
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const v = (k: string): string => form[k] ?? '';
  const agent = v('target') === 'agent';
  const field = (k: string) => ({
    name: k,
    value: v(k),
    onInput: (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value }),
  });

  const submit = (e: Event): void => {
    e.preventDefault();
    const body: Record<string, unknown> = { missed: v('missed') };
    if (v('id').trim() !== '') body.id = v('id').trim();
    if (v('name').trim() !== '') body.name = v('name').trim();
    if (v('mode') === 'every') body.every_ms = Math.round(Number(v('every')) * 1000);
    else {
      body.cron = v('cron').trim();
      if (v('timezone').trim() !== '') body.timezone = v('timezone').trim();
    }
    // The computer narrows a task template or an agent name (the server refuses it with a task id).
    const client = v('client').trim() !== '' ? { client_id: v('client').trim() } : {};
    if (v('target') === 'task') body.task = { task_kind: v('kind').trim(), prompt: v('prompt'), ...client };
    else if (agent) body.event = { agent: v('agent').trim(), ...client, name: v('event').trim() };
    else body.event = { task_id: v('task').trim(), name: v('event').trim() };
    setBusy(true);
    setError(undefined);
    schedulesApi
      .add(body)
      .then(() => {
        setForm({ mode: v('mode'), target: v('target'), missed: v('missed') });
        onAdded();
      })
      .catch((x: unknown) => setError(message(x)))
      .finally(() => setBusy(false));
  };

  return (
    <form class="form add-schedule" onSubmit={submit} aria-labelledby="add-sched-h">
      <h2 id="add-sched-h">Add a schedule</h2>
      <fieldset disabled={disabled}>
        <div class="grid2">
          <label>
            Id <span class="muted">(optional)</span>
            <input {...field('id')} />
          </label>
          <label>
            Name <span class="muted">(optional)</span>
            <input {...field('name')} />
          </label>
          <label>
            Fires
            <select {...field('mode')} onChange={(e) => setForm({ ...form, mode: e.currentTarget.value })}>
              <option value="every">at a fixed interval</option>
              <option value="cron">on a cron expression</option>
            </select>
          </label>
          {v('mode') === 'every' ? (
            <label>
              Every (seconds, at least 1)
              <input {...field('every')} inputMode="numeric" required />
            </label>
          ) : (
            <>
              <label>
                Cron <span class="muted">(5 fields, or 6 with seconds first)</span>
                <input {...field('cron')} placeholder="0 7 * * *" required />
              </label>
              <label>
                Time zone <span class="muted">(IANA; default UTC)</span>
                <input {...field('timezone')} placeholder="Europe/Berlin" />
              </label>
            </>
          )}
          <label>
            Missed while the server was down
            <select
              {...field('missed')}
              onChange={(e) => setForm({ ...form, missed: e.currentTarget.value })}
            >
              <option value="run_once">run once</option>
              <option value="skip">skip</option>
            </select>
          </label>
          <label>
            Each firing
            <select
              {...field('target')}
              onChange={(e) => setForm({ ...form, target: e.currentTarget.value })}
            >
              <option value="task">creates a task</option>
              <option value="event">sends an event to a task</option>
              <option value="agent">sends an event to an agent (by name)</option>
            </select>
          </label>
          {v('target') === 'task' ? (
            <>
              <label>
                Kind
                <input {...field('kind')} list="sched-kinds" required />
                <datalist id="sched-kinds">
                  {kinds.map((k) => (
                    <option value={k} key={k} />
                  ))}
                </datalist>
              </label>
            </>
          ) : (
            <>
              <label>
                {agent ? 'Agent name' : 'Task id'}
                <input {...field(agent ? 'agent' : 'task')} required />
              </label>
              <label>
                Event name
                <input {...field('event')} required />
              </label>
            </>
          )}
          {v('target') !== 'event' && (
            <label>
              Computer <span class="muted">(optional)</span>
              <input {...field('client')} />
            </label>
          )}
        </div>
        {v('target') === 'task' && (
          <label>
            Prompt
            <textarea {...field('prompt')} rows={3} required />
          </label>
        )}
        {error !== undefined && (
          <p class="error" role="alert">
            {visible(error)}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Adding…' : 'Add schedule'}
        </button>
      </fieldset>
    </form>
  );
}
