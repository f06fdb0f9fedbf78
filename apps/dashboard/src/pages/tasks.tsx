/**
 * The task list: status, kind, computer, age and the prompt's first line, filtered by status/kind/computer and
 * searched by id or prompt; fetched a page at a time as rows scroll into view (10,000 tasks cost a few pages), and
 * kept current by `task` events.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { live } from '../events.js';
import { useFeatures } from '../features.js';
import { age, statusText } from '../format.js';
import { navigate } from '../router.js';
import { Line } from '../text.js';
import { VirtualList } from '../virtual-list.js';
import { STATUSES, type WireTask } from '../wire.js';

const PAGE = 100;
const ROW_HEIGHT = 52;

const FILTERS: Record<string, string[]> = {
  all: [],
  active: ['queued', 'running', 'waiting_for_command', 'waiting_for_user'],
  ...Object.fromEntries(STATUSES.map((s) => [s, [s]])),
};

/** Tasks page. */
export function TasksPage({ now }: { now: number }) {
  const features = useFeatures();
  const [filter, setFilter] = useState('all');
  const [kind, setKind] = useState('');
  const [client, setClient] = useState('');
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState({ filter: 'all', kind: '', client: '', q: '' });
  const [total, setTotal] = useState<number | undefined>(undefined);
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | undefined>(undefined);
  const rows = useRef(new Map<number, WireTask>());
  const loading = useRef(new Set<number>());
  const range = useRef<[number, number]>([0, 40]);
  const generation = useRef(0);

  const load = (page: number): void => {
    const gen = generation.current;
    if (loading.current.has(page)) return;
    loading.current.add(page);
    api
      .listTasks({
        status: FILTERS[query.filter] ?? [],
        kind: query.kind,
        client: query.client,
        q: query.q,
        limit: PAGE,
        offset: page * PAGE,
      })
      .then((r) => {
        if (gen !== generation.current) return;
        r.tasks.forEach((t, i) => rows.current.set(page * PAGE + i, t));
        setTotal(r.total);
        setError(undefined);
        setVersion((v) => v + 1);
      })
      .catch((e: unknown) => {
        if (gen === generation.current) setError(e instanceof ApiError ? e.message : String(e));
      })
      .finally(() => loading.current.delete(page));
  };

  const loadRange = (start: number, end: number): void => {
    for (let p = Math.floor(start / PAGE); p <= Math.floor(Math.max(start, end - 1) / PAGE); p++) {
      if (!rows.current.has(p * PAGE)) load(p);
    }
  };

  const reset = (): void => {
    generation.current += 1;
    rows.current = new Map();
    loading.current = new Set();
    // Rows of the previous query must not stay on screen (or be opened) while the new page loads.
    setVersion((v) => v + 1);
    const [s, e] = range.current;
    loadRange(s, e);
  };

  useEffect(reset, [query]);

  // Live: a known task updates in place; an unknown one (new, or now matching the filter) refetches the view.
  useEffect(() => {
    let pending: ReturnType<typeof setTimeout> | undefined;
    const refetch = (): void => {
      if (pending !== undefined) return;
      pending = setTimeout(() => {
        pending = undefined;
        reset();
      }, 250);
    };
    const off = live.on((e) => {
      if (e.type === 'resync') return refetch();
      if (e.type !== 'task') return;
      const t = e.data;
      for (const [i, row] of rows.current) {
        if (row.id === t.id) {
          const wanted = FILTERS[query.filter] ?? [];
          if (wanted.length > 0 && !wanted.includes(t.status)) return refetch();
          rows.current.set(i, { ...row, ...t });
          setVersion((v) => v + 1);
          return;
        }
      }
      refetch();
    });
    return () => {
      off();
      if (pending !== undefined) clearTimeout(pending);
    };
  }, [query]);

  const apply = (e: Event): void => {
    e.preventDefault();
    setQuery({ filter, kind: kind.trim(), client: client.trim(), q: search.trim() });
  };

  const count = total ?? 0;
  const list = useMemo(
    () => (
      <VirtualList
        id="task-list"
        label="Tasks"
        count={count}
        rowHeight={ROW_HEIGHT}
        onRange={(s, e) => {
          range.current = [s, e];
          loadRange(s, e);
        }}
        onOpen={(i) => {
          const t = rows.current.get(i);
          if (t) navigate(`/tasks/${encodeURIComponent(t.id)}`);
        }}
        row={(i) => <TaskRow t={rows.current.get(i)} now={now} />}
        empty={total === undefined ? 'Loading…' : 'No tasks match.'}
      />
    ),
    [count, version, now, total],
  );

  return (
    <section class="page tasks-page" aria-labelledby="tasks-h">
      <div class="page-head">
        <h1 id="tasks-h">Tasks</h1>
        <span class="muted" aria-live="polite">
          {total === undefined ? '' : `${total.toLocaleString('en-US')} tasks`}
        </span>
        {features.role !== 'viewer' && (
          <a class="button primary" href="#/new">
            New task
          </a>
        )}
      </div>
      <form class="filters" onSubmit={apply} role="search">
        <label>
          Status
          <select value={filter} onChange={(e) => setFilter(e.currentTarget.value)}>
            {Object.keys(FILTERS).map((f) => (
              <option value={f} key={f}>
                {statusText(f)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <input value={kind} onInput={(e) => setKind(e.currentTarget.value)} placeholder="any" size={10} />
        </label>
        <label>
          Computer
          <input
            value={client}
            onInput={(e) => setClient(e.currentTarget.value)}
            placeholder="any"
            size={10}
          />
        </label>
        <label class="grow">
          Search
          <input
            type="search"
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
            placeholder="id or words of the prompt"
          />
        </label>
        <button type="submit">Apply</button>
      </form>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="list-head" aria-hidden="true">
        <span>status</span>
        <span>task</span>
        <span>computer</span>
        <span>steps</span>
        <span>age</span>
      </div>
      {list}
    </section>
  );
}

function TaskRow({ t, now }: { t: WireTask | undefined; now: number }) {
  if (!t) return <div class="task-row placeholder">…</div>;
  return (
    <a
      class="task-row"
      href={`#/tasks/${encodeURIComponent(t.id)}`}
      tabIndex={-1}
      data-task-id={t.id}
      onClick={(e) => e.preventDefault()}
    >
      <span class={`badge s-${t.status}`}>{statusText(t.status)}</span>
      <span class="task-main">
        <span class="task-prompt">
          <Line text={t.prompt === '' ? '(no prompt)' : t.prompt} max={140} />
        </span>
        <span class="muted small-text">
          {t.kind} · {t.id.slice(0, 8)}
        </span>
      </span>
      <span class="task-client">{t.client_id ?? 'any'}</span>
      <span class="task-steps">{t.counters.steps}</span>
      <span class="task-age" title={new Date(t.created_at).toLocaleString()}>
        {age(t.created_at, now)}
      </span>
    </a>
  );
}
