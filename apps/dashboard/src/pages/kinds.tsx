/**
 * The Kinds page (`#/kinds`): every task kind in effect — its strategy, system prompt, allowed commands, the model and
 * provider of each role it calls, budgets and confirmation rules — and where it comes from. The config file defines
 * the kinds of a fresh install; a kind saved here is stored in the database and WINS over the file's kind of the
 * same name ("Remove" brings the file's back). An operator edits a kind or creates one; the server validates it with
 * the config file's schema and answers a refusal with the field, shown beside the form. Tasks created after a save
 * use it; running tasks keep theirs. From `GET /api/task-kinds`, saved with `POST /api/task-kinds/:name`. A kind may
 * choose its own model per role, among the models the operator allows, on a server the config file declares.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api.js';
import { forgetFeatures, useFeatures, VIEWER_NOTE } from '../features.js';
import { visible } from '../text.js';
import { NumberField } from './fields.js';

type Definition = Record<string, unknown>;

interface WireKind {
  name: string;
  source: 'config' | 'stored' | 'stored_over_config';
  definition: Definition;
  config_definition?: Definition;
  revision?: number;
  saved_at?: number;
  saved_by?: string;
  roles: Array<{ role: string; model: string; provider: string; endpoint: string }>;
  aliases: string[];
}

/** What a kind's `models` may choose: allowed model names and the configured servers (one per role). */
interface Choices {
  models?: string[];
  endpoints?: Array<{ endpoint: string; provider: string; url: string }>;
}

/** The model roles each strategy calls (chat runs on the native role). */
const ROLES_OF: Record<string, string[]> = {
  planner_executor: ['planner', 'executor'],
  native: ['native'],
  chat: ['native'],
};

const SOURCE_TEXT: Record<WireKind['source'], string> = {
  config: 'config file',
  stored: 'saved here',
  stored_over_config: 'saved here, over the config file',
};

const STRATEGIES = ['native', 'planner_executor', 'chat'] as const;

/** The fields the form edits; every other field of a definition is kept as it is (and shown as JSON). */
const FORM_KEYS = [
  'description',
  'strategy',
  'systemPrompt',
  'allowedCommands',
  'budgets',
  'confirm',
  'models',
];

function list(text: string): string[] {
  return text
    .split(/[,\n]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function numOrUndefined(text: string): number | undefined | 'bad' {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : 'bad';
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The budgets as one line (`40 steps · 60 tool calls · 60 min`). */
function budgetsText(d: Definition): string {
  const b = rec(d.budgets);
  const parts: string[] = [];
  if (typeof b.maxSteps === 'number') parts.push(`${b.maxSteps} steps`);
  if (typeof b.maxToolCalls === 'number') parts.push(`${b.maxToolCalls} tool calls`);
  if (typeof b.deadlineMs === 'number') parts.push(`${Math.round(b.deadlineMs / 60_000)} min`);
  if (typeof b.maxPromptTokens === 'number') parts.push(`${b.maxPromptTokens} prompt tokens`);
  if (typeof b.maxOutputTokens === 'number') parts.push(`${b.maxOutputTokens} output tokens`);
  const p = rec(d.periodBudgets);
  for (const w of ['hour', 'day']) {
    const x = rec(p[w]);
    if (Object.keys(x).length > 0)
      parts.push(
        `per ${w}: ${Object.entries(x)
          .map(([k, v]) => `${k} ${String(v)}`)
          .join(', ')}`,
      );
  }
  return parts.length > 0 ? parts.join(' · ') : 'none';
}

function confirmText(d: Definition): string {
  const c = rec(d.confirm);
  if (Object.keys(c).length === 0) return 'none';
  const parts: string[] = [];
  const cmds = strings(c.commands);
  if (cmds.length > 0) parts.push(`always: ${cmds.join(', ')}`);
  if (typeof c.sandbox === 'string') parts.push(`writes outside ${c.sandbox}`);
  const pats = strings(c.shellPatterns);
  if (pats.length > 0) parts.push(`shell lines matching ${pats.map((p) => `/${p}/`).join(' ')}`);
  return parts.length > 0 ? parts.join(' · ') : 'none';
}

/** The page. */
export function KindsPage() {
  const f = useFeatures();
  const [kinds, setKinds] = useState<WireKind[] | undefined>(undefined);
  const [choices, setChoices] = useState<Choices>({});
  const [error, setError] = useState<string | undefined>(undefined);
  const [editing, setEditing] = useState<{ kind: WireKind | undefined } | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const operator = f.role !== 'viewer';

  const load = (): void => {
    request<{ kinds: WireKind[] } & Choices>('/api/task-kinds')
      .then((r) => {
        setKinds(r.kinds);
        setChoices(r);
        setError(undefined);
      })
      .catch((x: unknown) => setError(x instanceof ApiError ? x.message : String(x)));
  };
  useEffect(load, []);

  const remove = (k: WireKind): void => {
    request<{ removed: string; source?: string }>(`/api/task-kinds/${encodeURIComponent(k.name)}/remove`, {
      method: 'POST',
      body: k.revision !== undefined ? { expected_revision: k.revision } : {},
    })
      .then((r) => {
        forgetFeatures();
        setNotice(
          r.source
            ? `Removed the saved ${r.removed}: the config file’s applies again.`
            : `Removed ${r.removed}.`,
        );
        load();
      })
      .catch((x: unknown) => setError(x instanceof ApiError ? x.message : String(x)));
  };

  return (
    <section class="page kinds-page" aria-labelledby="kinds-h">
      <div class="page-head">
        <h1 id="kinds-h">Task kinds</h1>
        {operator && (
          <button
            type="button"
            class="button primary"
            onClick={() => {
              setNotice(undefined);
              setEditing({ kind: undefined });
            }}
          >
            New kind
          </button>
        )}
      </div>
      <p class="muted">
        The config file defines the kinds of a fresh install. A kind saved here is kept in the database and
        wins over the config file’s kind of the same name; removing it brings the file’s back. New tasks use a
        saved kind at once; running tasks keep the definition they started with.
      </p>
      {!operator && (
        <p class="note" role="status">
          {VIEWER_NOTE}
        </p>
      )}
      {notice !== undefined && (
        <p class="note" role="status" data-testid="kinds-notice">
          {notice}
        </p>
      )}
      {error !== undefined && (
        <p class="error" role="alert">
          {visible(error)}
        </p>
      )}
      {editing !== undefined && (
        <KindEditor
          kind={editing.kind}
          choices={choices}
          onCancel={() => setEditing(undefined)}
          onSaved={(k, warnings) => {
            forgetFeatures();
            setEditing(undefined);
            setNotice(
              `Saved ${k.name} (revision ${k.revision ?? '?'}): new tasks of this kind use it.${warnings ? ` Not checked: ${warnings.join('; ')}` : ''}`,
            );
            load();
          }}
        />
      )}
      {kinds === undefined ? (
        <p class="muted">Loading…</p>
      ) : (
        <ul class="kinds" aria-label="Task kinds">
          {kinds.map((k) => (
            <li key={k.name} class="kind card" data-kind={k.name} data-source={k.source}>
              <div class="kind-head">
                <h2>
                  <code>{visible(k.name)}</code>
                </h2>
                <span class={`badge ${k.source === 'config' ? 's-cancelled' : 's-running'}`}>
                  {SOURCE_TEXT[k.source]}
                </span>
                {k.revision !== undefined && (
                  <span class="muted small-text">
                    revision {k.revision}
                    {k.saved_by !== undefined && <> by {visible(k.saved_by)}</>}
                    {k.saved_at !== undefined && <> · {new Date(k.saved_at).toLocaleString()}</>}
                  </span>
                )}
                {operator && (
                  <span class="kind-actions">
                    <button
                      type="button"
                      class="small"
                      onClick={() => {
                        setNotice(undefined);
                        setEditing({ kind: k });
                      }}
                    >
                      Edit
                    </button>
                    {k.source !== 'config' && (
                      <button type="button" class="small danger" onClick={() => remove(k)}>
                        {k.source === 'stored_over_config' ? 'Use the config file’s' : 'Remove'}
                      </button>
                    )}
                  </span>
                )}
              </div>
              {str(k.definition.description) !== '' && (
                <p class="kind-description">{visible(str(k.definition.description))}</p>
              )}
              <dl class="kind-facts">
                <dt>Strategy</dt>
                <dd>{visible(str(k.definition.strategy))}</dd>
                <dt>Models</dt>
                <dd>
                  {k.roles.map((r) => (
                    <span key={r.role} class="kind-role" data-role={r.role}>
                      {r.role}: <code>{visible(r.model)}</code>{' '}
                      <span class="muted">
                        ({visible(r.provider)}
                        {r.endpoint !== (r.role === 'chat' ? 'native' : r.role) &&
                          `, on the ${r.endpoint} server`}
                        )
                      </span>
                    </span>
                  ))}
                </dd>
                <dt>Allowed commands</dt>
                <dd>
                  {k.definition.strategy === 'chat'
                    ? 'none: a chat kind calls no tools'
                    : strings(k.definition.allowedCommands).length === 0
                      ? 'any command the computer offers'
                      : visible(strings(k.definition.allowedCommands).join(', '))}
                </dd>
                <dt>Budgets</dt>
                <dd>{visible(budgetsText(k.definition))}</dd>
                <dt>Needs a yes</dt>
                <dd>{visible(confirmText(k.definition))}</dd>
                {k.aliases.length > 0 && (
                  <>
                    <dt>Also called</dt>
                    <dd>{visible(k.aliases.join(', '))}</dd>
                  </>
                )}
              </dl>
              {str(k.definition.systemPrompt) !== '' && (
                <details>
                  <summary>System prompt</summary>
                  <pre class="plain kind-prompt">{visible(str(k.definition.systemPrompt))}</pre>
                </details>
              )}
              <details>
                <summary>Whole definition (JSON)</summary>
                <pre class="plain">{visible(JSON.stringify(k.definition, null, 2))}</pre>
                {k.config_definition !== undefined && (
                  <>
                    <p class="muted small-text">The config file’s definition, which this one wins over:</p>
                    <pre class="plain">{visible(JSON.stringify(k.config_definition, null, 2))}</pre>
                  </>
                )}
              </details>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The form of one kind (`kind` undefined: a new one). */
function KindEditor({
  kind,
  choices,
  onCancel,
  onSaved,
}: {
  kind: WireKind | undefined;
  choices: Choices;
  onCancel: () => void;
  onSaved: (k: WireKind, warnings?: string[]) => void;
}) {
  const d = kind?.definition ?? { strategy: 'native' };
  const b = rec(d.budgets);
  const c = rec(d.confirm);
  const rest = Object.fromEntries(Object.entries(d).filter(([k]) => !FORM_KEYS.includes(k)));
  const [name, setName] = useState(kind?.name ?? '');
  const [description, setDescription] = useState(str(d.description));
  const [strategy, setStrategy] = useState(str(d.strategy) || 'native');
  const [prompt, setPrompt] = useState(str(d.systemPrompt));
  const [commands, setCommands] = useState(strings(d.allowedCommands).join(', '));
  const [maxSteps, setMaxSteps] = useState(typeof b.maxSteps === 'number' ? String(b.maxSteps) : '');
  const [maxToolCalls, setMaxToolCalls] = useState(
    typeof b.maxToolCalls === 'number' ? String(b.maxToolCalls) : '',
  );
  const [deadlineMin, setDeadlineMin] = useState(
    typeof b.deadlineMs === 'number' ? String(b.deadlineMs / 60_000) : '',
  );
  const [confirmCommands, setConfirmCommands] = useState(strings(c.commands).join(', '));
  const [sandbox, setSandbox] = useState(str(c.sandbox));
  const [patterns, setPatterns] = useState(strings(c.shellPatterns).join('\n'));
  const [more, setMore] = useState(JSON.stringify(rest, null, 2));
  const [models, setModels] = useState(rec(d.models) as Record<string, Record<string, string>>);
  const setRole = (role: string, field: 'name' | 'endpoint', value: string): void => {
    const m = { ...models[role], [field]: value };
    if (value === '') delete m[field];
    // another server: the provider follows it
    if (field === 'endpoint') delete m.provider;
    setModels({ ...models, [role]: m });
  };
  const [error, setError] = useState<{ message: string; path?: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = (e: Event): void => {
    e.preventDefault();
    let extra: unknown;
    try {
      extra = more.trim() === '' ? {} : JSON.parse(more);
    } catch (x) {
      setError({ message: `Other settings are not valid JSON: ${(x as Error).message}`, path: 'more' });
      return;
    }
    if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) {
      setError({ message: 'Other settings must be a JSON object', path: 'more' });
      return;
    }
    const definition: Definition = { ...(extra as Definition), strategy };
    if (description.trim() !== '') definition.description = description;
    if (prompt.trim() !== '') definition.systemPrompt = prompt;
    definition.allowedCommands = list(commands);
    // budgets the form does not show (token budgets) are kept
    const budgets: Record<string, unknown> = { ...b };
    for (const [key, text, scale] of [
      ['maxSteps', maxSteps, 1],
      ['maxToolCalls', maxToolCalls, 1],
      ['deadlineMs', deadlineMin, 60_000],
    ] as const) {
      const n = numOrUndefined(text);
      if (n === 'bad') {
        setError({ message: `${key} must be a number`, path: `$.definition.budgets.${key}` });
        return;
      }
      if (n === undefined) delete budgets[key];
      else budgets[key] = Math.round(n * scale);
    }
    definition.budgets = budgets;
    const confirm: Record<string, unknown> = {};
    if (list(confirmCommands).length > 0) confirm.commands = list(confirmCommands);
    if (sandbox.trim() !== '') confirm.sandbox = sandbox.trim();
    const pats = patterns
      .split('\n')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    if (pats.length > 0) confirm.shellPatterns = pats;
    if (Object.keys(confirm).length > 0) definition.confirm = confirm;
    // only the roles the strategy calls, and only what was chosen
    const chosen = Object.fromEntries(
      (ROLES_OF[strategy] ?? [])
        .map((r) => [r, models[r] ?? {}] as const)
        .filter(([, m]) => Object.keys(m).length > 0),
    );
    if (Object.keys(chosen).length > 0) definition.models = chosen;
    setBusy(true);
    setError(undefined);
    request<{ kind: WireKind; warnings?: string[] }>(`/api/task-kinds/${encodeURIComponent(name.trim())}`, {
      method: 'POST',
      body: { definition, expected_revision: kind?.revision ?? 0 },
    })
      .then((r) => onSaved(r.kind, r.warnings))
      .catch((x: unknown) => {
        if (x instanceof ApiError) setError({ message: x.message, ...(x.path ? { path: x.path } : {}) });
        else setError({ message: String(x) });
      })
      .finally(() => setBusy(false));
  };

  return (
    <form
      class="form card kind-editor"
      onSubmit={submit}
      aria-label={kind ? `Edit ${kind.name}` : 'New kind'}
    >
      <h2>{kind ? `Edit ${kind.name}` : 'New kind'}</h2>
      {kind?.source === 'config' && (
        <p class="muted small-text">
          Saving stores this kind in the database; it then wins over the config file’s.
        </p>
      )}
      <div class="grid2">
        <label>
          Name <span class="muted">(lower_snake_case)</span>
          <input
            name="name"
            value={name}
            required
            readOnly={kind !== undefined}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
        <label>
          Strategy
          <select name="strategy" value={strategy} onChange={(e) => setStrategy(e.currentTarget.value)}>
            {STRATEGIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label>
        Description
        <input
          name="description"
          value={description}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
      </label>
      <label>
        System prompt{' '}
        <span class="muted">
          (native and chat: replaces the shipped prompt; planner/executor: added to it)
        </span>
        <textarea
          name="systemPrompt"
          rows={5}
          value={prompt}
          onInput={(e) => setPrompt(e.currentTarget.value)}
        />
      </label>
      <label>
        Allowed commands <span class="muted">(comma-separated; empty = any command the computer offers)</span>
        <input name="allowedCommands" value={commands} onInput={(e) => setCommands(e.currentTarget.value)} />
      </label>
      <fieldset>
        <legend>Budgets of one run</legend>
        <div class="grid2">
          <NumberField label="Max steps" name="maxSteps" mode="numeric" value={maxSteps} set={setMaxSteps} />
          <NumberField
            label="Max tool calls"
            name="maxToolCalls"
            mode="numeric"
            value={maxToolCalls}
            set={setMaxToolCalls}
          />
          <NumberField
            label="Deadline (minutes)"
            name="deadlineMin"
            mode="decimal"
            value={deadlineMin}
            set={setDeadlineMin}
          />
        </div>
      </fieldset>
      <fieldset>
        <legend>Models</legend>
        {(ROLES_OF[strategy] ?? []).map((r) => (
          <div class="grid2" key={r} data-role={r}>
            <label>
              {strategy === 'chat' ? 'chat' : r} model
              <select
                name={`model-${r}`}
                value={str(models[r]?.name)}
                onChange={(e) => setRole(r, 'name', e.currentTarget.value)}
              >
                <option value="">the config file’s</option>
                {(choices.models ?? []).map((m) => (
                  <option key={m}>{m}</option>
                ))}
              </select>
            </label>
            <label>
              Server
              <select
                name={`endpoint-${r}`}
                value={str(models[r]?.endpoint)}
                onChange={(e) => setRole(r, 'endpoint', e.currentTarget.value)}
              >
                <option value="">the config file’s</option>
                {(choices.endpoints ?? []).map((x) => (
                  <option key={x.endpoint} value={x.endpoint} title={x.url}>
                    {x.endpoint} ({x.provider})
                  </option>
                ))}
              </select>
            </label>
          </div>
        ))}
      </fieldset>
      <fieldset>
        <legend>Needs a person’s yes</legend>
        <div class="grid2">
          <label>
            Commands <span class="muted">(always)</span>
            <input
              name="confirmCommands"
              value={confirmCommands}
              onInput={(e) => setConfirmCommands(e.currentTarget.value)}
            />
          </label>
          <label>
            Sandbox <span class="muted">(file changes outside it)</span>
            <input
              name="sandbox"
              value={sandbox}
              placeholder="/work"
              onInput={(e) => setSandbox(e.currentTarget.value)}
            />
          </label>
        </div>
        <label>
          Shell patterns <span class="muted">(one regular expression a line)</span>
          <textarea
            name="shellPatterns"
            rows={2}
            value={patterns}
            onInput={(e) => setPatterns(e.currentTarget.value)}
          />
        </label>
      </fieldset>
      <label>
        Other settings{' '}
        <span class="muted">(JSON: executorMode, maxIterations, policy, periodBudgets … see the docs)</span>
        <textarea
          name="more"
          rows={4}
          class="mono"
          value={more}
          onInput={(e) => setMore(e.currentTarget.value)}
        />
      </label>
      {error !== undefined && (
        <p class="error" role="alert" data-testid="kind-error">
          {error.path !== undefined && <code>{visible(error.path)}</code>} {visible(error.message)}
        </p>
      )}
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
