/**
 * Task kinds edited at run time. The configuration file (with the built-in defaults) is the source of a fresh
 * install; kinds an operator saves (HTTP `/api/task-kinds`, the dashboard's Kinds page) are kept in the database as
 * revisions and WIN over a file kind of the same name, or add a kind. Removing a stored kind brings the file's
 * definition back (or removes the kind when the file has none).
 *
 * A definition is validated with the config file's own task-kind schema (`taskKindSchema`), then by building its
 * strategy (the agent policy's own check); a refusal names the field and changes nothing. A save is on disk before
 * it is answered, audited, and applies to tasks created after it without a restart: the engine's kind catalogue is
 * updated in place. A task keeps the definition in effect when it was created (its strategy is chosen by the task's
 * creation time), also across a restart.
 */
import {
  EngineError,
  taskKindsAt,
  type Clock,
  type JsonValue,
  type Task,
  type TaskKindCatalogue,
  type TaskKindRevision,
  type TaskKindStore,
} from '@ccagent/engine';
import {
  formatIssues,
  kindName,
  rolesFor,
  taskKindSchema,
  type OrchestratorConfig,
  type TaskKindConfig,
} from './config.js';
import {
  allowedModelNames,
  endpointOf,
  kindEndpoint,
  kindModelIssues,
  kindRoleConfig,
} from './kind-models.js';
import type { KindModelCheck } from './strategies.js';
import { kindCatalogue } from './task-catalogue.js';

/** A refusal of a save or a removal (the HTTP layer maps `code` to a status). */
export interface TaskKindRefusal {
  code: 'invalid_field' | 'not_found' | 'conflict' | 'unavailable';
  message: string;
  path?: string;
}

type Result<T> = { ok: true; value: T } | { ok: false; error: TaskKindRefusal };

/** Where a kind's definition in effect comes from. */
export type TaskKindSource = 'config' | 'stored' | 'stored_over_config';

/** One kind as the dashboard and `GET /api/task-kinds` show it. */
export interface TaskKindView {
  name: string;
  source: TaskKindSource;
  /** The definition in effect (the config file's shape, defaults filled in). */
  definition: TaskKindConfig;
  /** The config file's definition, when a stored one overrides it. */
  configDefinition?: TaskKindConfig;
  /** The stored revision in effect (absent for a config kind). */
  revision?: number;
  savedAt?: number;
  savedBy?: string;
  /**
   * The model roles the kind's strategy calls, with the model and provider each uses (the kind's own `models` over
   * the configuration's) and `endpoint`, the configured role whose server serves the calls.
   */
  roles: Array<{ role: string; model: string; provider: string; endpoint: string }>;
  /** Other names that mean this kind. */
  aliases: string[];
}

/** A kind's definition for one task: the spec and a version key (`file`, or `r<revision>`). */
export interface KindVersion {
  spec: TaskKindConfig;
  version: string;
}

export interface TaskKindServiceOptions {
  /** The configuration as loaded from the file (its `taskKinds` are the file's kinds). */
  config: OrchestratorConfig;
  store: TaskKindStore;
  /** The catalogue the task operations read; its `kinds` are replaced in place when a kind changes. */
  catalogues: TaskKindCatalogue[];
  clock: Clock;
  /** Builds (and keeps) the strategy of a definition; throws `OrchestratorError('config_invalid')` when it cannot. */
  prepare?: (name: string, spec: TaskKindConfig, version: string) => void;
  /** Asks the model servers for a kind's own models (a save is refused when a reachable server lacks one). */
  checkModels?: (spec: TaskKindConfig) => Promise<KindModelCheck>;
  /** The Ollama URL of roles without their own `baseUrl` (shown with the endpoints). */
  ollamaUrl?: string;
  logger: { warn(obj: unknown, msg?: string): void };
}

/** What a kind may choose for its roles' models: the allowed model names and the configured servers. */
export interface KindModelChoices {
  models: string[];
  endpoints: Array<{ endpoint: string; provider: string; url: string }>;
}

/** Run-time task kinds over the configuration's (see the module comment). */
export class TaskKindService {
  private revisions: TaskKindRevision[] = [];
  /** Parsed definitions of stored revisions, by `name#revision` (null: removed). */
  private readonly parsed = new Map<string, TaskKindConfig | null>();
  private current: Record<string, TaskKindConfig>;

  constructor(private readonly o: TaskKindServiceOptions) {
    this.current = { ...o.config.taskKinds };
  }

  /** Reads the stored revisions; a stored definition the schema no longer accepts is skipped with a warning. */
  async load(): Promise<void> {
    this.revisions = await this.o.store.listTaskKindRevisions();
    for (const r of this.revisions) {
      if (r.definition === null) {
        this.parsed.set(`${r.name}#${r.revision}`, null);
        continue;
      }
      const p = taskKindSchema.safeParse(r.definition);
      // a model the configuration no longer allows (or a provider it no longer has) makes the kind invalid, too
      const issues = p.success
        ? kindModelIssues(this.o.config, p.data).map((i) => `${i.path.join('.')}: ${i.message}`)
        : formatIssues(p.error);
      if (p.success && issues.length === 0) this.parsed.set(`${r.name}#${r.revision}`, p.data);
      else
        this.o.logger.warn(
          { kind: r.name, revision: r.revision, issues },
          'a stored task kind is no longer valid; it is ignored',
        );
    }
    this.apply();
  }

  /** The kinds in effect now, by name. */
  kinds(): Readonly<Record<string, TaskKindConfig>> {
    return this.current;
  }

  /** Whether any definition (in effect now or kept for a running task) asks for confirmations. */
  anyConfirm(): boolean {
    if (Object.values(this.o.config.taskKinds).some((k) => k.confirm !== undefined)) return true;
    for (const spec of this.parsed.values()) if (spec?.confirm !== undefined) return true;
    return false;
  }

  /** Whether a kind of that name exists now or ever existed (a running task may still use it). */
  known(kind: string): boolean {
    return Object.hasOwn(this.current, kind) || this.revisions.some((r) => r.name === kind);
  }

  /** The definition a task of `kind` created at `at` runs with (undefined: no such kind then). */
  versionAt(kind: string, at: number): KindVersion | undefined {
    let latest: TaskKindRevision | undefined;
    for (const r of this.revisions) {
      if (r.name === kind && r.savedAt <= at && (latest === undefined || latest.revision < r.revision))
        latest = r;
    }
    const parsed = latest ? this.parsed.get(`${kind}#${latest.revision}`) : undefined;
    if (latest && parsed) return { spec: parsed, version: `r${latest.revision}` };
    const file = this.o.config.taskKinds[kind];
    if (file !== undefined) return { spec: file, version: 'file' };
    // created before the kind existed (clock skew): what is in effect now
    return this.versionNow(kind);
  }

  /** The definition of a task (by its creation time). */
  versionOf(task: Pick<Task, 'kind' | 'createdAt'>): KindVersion | undefined {
    return this.versionAt(task.kind, task.createdAt);
  }

  private versionNow(kind: string): KindVersion | undefined {
    const latest = taskKindsAt(this.revisions).get(kind);
    const parsed = latest ? this.parsed.get(`${kind}#${latest.revision}`) : undefined;
    if (latest && parsed) return { spec: parsed, version: `r${latest.revision}` };
    const file = this.o.config.taskKinds[kind];
    return file !== undefined ? { spec: file, version: 'file' } : undefined;
  }

  /** Every kind in effect, with where it comes from. */
  list(): { kinds: TaskKindView[]; aliases: Record<string, string> } {
    const latest = taskKindsAt(this.revisions);
    const kinds: TaskKindView[] = [];
    for (const name of Object.keys(this.current).sort()) {
      const definition = this.current[name] as TaskKindConfig;
      const file = this.o.config.taskKinds[name];
      const r = latest.get(name);
      const stored = r !== undefined && r.definition !== null && this.parsed.get(`${name}#${r.revision}`);
      const view: TaskKindView = {
        name,
        source: stored ? (file ? 'stored_over_config' : 'stored') : 'config',
        definition,
        roles: rolesFor(definition).map((role) => {
          const m = kindRoleConfig(this.o.config, role, definition);
          return {
            role: definition.strategy === 'chat' ? 'chat' : role,
            model: m.name,
            provider: m.provider,
            endpoint: kindEndpoint(this.o.config, role, definition),
          };
        }),
        aliases: Object.entries(this.o.config.kindAliases)
          .filter(([, target]) => target === name)
          .map(([alias]) => alias),
      };
      if (stored && file) view.configDefinition = file;
      if (stored && r) {
        view.revision = r.revision;
        view.savedAt = r.savedAt;
        if (r.savedBy !== undefined) view.savedBy = r.savedBy;
      }
      kinds.push(view);
    }
    return { kinds, aliases: { ...this.o.config.kindAliases } };
  }

  /** The model names and configured servers a kind's `models` may choose. */
  modelChoices(): KindModelChoices {
    return {
      models: [...new Set(allowedModelNames(this.o.config))],
      endpoints: (['planner', 'executor', 'native'] as const).map((r) =>
        endpointOf(this.o.config, r, this.o.ollamaUrl ?? 'http://127.0.0.1:11434'),
      ),
    };
  }

  /**
   * Saves a kind (a new one, or a new definition of an existing one): validated, on disk, then in effect for new
   * tasks. `expectedRevision` (0: none stored yet) refuses the save when someone else saved the kind meanwhile.
   */
  async save(
    name: string,
    definition: unknown,
    actor: string,
    expectedRevision?: number,
  ): Promise<Result<TaskKindView & { warnings?: string[] }>> {
    const n = kindName.safeParse(name);
    if (!n.success) return refuse('invalid_field', formatIssues(n.error)[0] ?? 'bad name', 'name');
    if (Object.hasOwn(this.o.config.kindAliases, name)) {
      return refuse('invalid_field', `"${name}" is an alias of "${this.o.config.kindAliases[name]}"`, 'name');
    }
    if (typeof definition === 'object' && definition !== null && 'systemPromptFile' in definition) {
      return refuse(
        'invalid_field',
        'systemPromptFile is read from the config file only; give the text as systemPrompt',
        '$.definition.systemPromptFile',
      );
    }
    const p = taskKindSchema.safeParse(definition);
    if (!p.success) {
      const issue = p.error.issues[0];
      const where = ['$', 'definition', ...(issue?.path ?? []).map(String)].join('.');
      return refuse('invalid_field', formatIssues(p.error).join('; '), where);
    }
    // the rules the config file's kinds follow at load (models allowed, providers configured)
    const issue = kindModelIssues(this.o.config, p.data)[0];
    if (issue !== undefined) {
      const where = issue.path.map(String).join('.');
      return refuse('invalid_field', `${where}: ${issue.message}`, `$.definition.${where}`);
    }
    // the kind's own models on their servers: missing on a reachable server refuses; no answer saves with a warning
    const check = this.o.checkModels ? await this.o.checkModels(p.data) : { missing: [], unreachable: [] };
    const missing = check.missing[0];
    if (missing !== undefined) {
      const where = `models.${missing.role}.name`;
      return refuse('invalid_field', `${where}: ${missing.message}`, `$.definition.${where}`);
    }
    const warnings = check.unreachable.map((u) => `models.${u.role}: ${u.message}`);
    for (const w of warnings) this.o.logger.warn({ kind: name, warning: w }, 'task kind saved unchecked');
    const revision = this.latestRevision(name) + 1;
    if (expectedRevision !== undefined && expectedRevision !== revision - 1) {
      return refuse(
        'conflict',
        `task kind ${name} is at revision ${revision - 1}, not ${expectedRevision}: someone saved it meanwhile; reload`,
        '$.expected_revision',
      );
    }
    try {
      this.o.prepare?.(name, p.data, `r${revision}`);
    } catch (err) {
      // the agent's own checks name the config path (`taskKinds.<name>.policy: …`): name the body's field instead
      const message = (err as Error).message.replace(/^taskKinds\.[a-z0-9_]+\./, 'definition.');
      return refuse(
        'invalid_field',
        message,
        `$.${/^(definition\.[A-Za-z0-9_.]+):/.exec(message)?.[1] ?? 'definition'}`,
      );
    }
    const stored = await this.append({
      name,
      revision,
      // what was checked, with the defaults filled in: the same definition after any later schema default change
      definition: p.data as unknown as JsonValue,
      savedAt: this.o.clock.now(),
      savedBy: actor,
    });
    if (!stored.ok) return stored;
    this.parsed.set(`${name}#${revision}`, p.data);
    this.apply();
    const view = this.list().kinds.find((k) => k.name === name) as TaskKindView;
    return { ok: true, value: warnings.length > 0 ? { ...view, warnings } : view };
  }

  /** Removes a stored kind: the file's definition applies again, or the kind is gone when the file has none. */
  async remove(
    name: string,
    actor: string,
    expectedRevision?: number,
  ): Promise<Result<{ name: string; source?: TaskKindSource }>> {
    const latest = taskKindsAt(this.revisions).get(name);
    if (latest === undefined || latest.definition === null) {
      return refuse(
        'not_found',
        `no stored task kind ${name} (kinds of the config file are changed by saving over them)`,
        'name',
      );
    }
    if (expectedRevision !== undefined && expectedRevision !== latest.revision) {
      return refuse(
        'conflict',
        `task kind ${name} is at revision ${latest.revision}, not ${expectedRevision}; reload`,
        '$.expected_revision',
      );
    }
    const stored = await this.append({
      name,
      revision: latest.revision + 1,
      definition: null,
      savedAt: this.o.clock.now(),
      savedBy: actor,
    });
    if (!stored.ok) return stored;
    this.parsed.set(`${name}#${latest.revision + 1}`, null);
    this.apply();
    const view = this.list().kinds.find((k) => k.name === name);
    return { ok: true, value: view ? { name, source: view.source } : { name } };
  }

  private latestRevision(name: string): number {
    return taskKindsAt(this.revisions).get(name)?.revision ?? 0;
  }

  private async append(r: TaskKindRevision): Promise<Result<void>> {
    try {
      await this.o.store.appendTaskKindRevision(r);
    } catch (err) {
      if (err instanceof EngineError && err.code === 'conflict') {
        // another orchestrator on the same database saved first: read what it saved
        this.revisions = await this.o.store.listTaskKindRevisions().catch(() => this.revisions);
        return refuse('conflict', `${err.message}; reload and save again`, 'name');
      }
      return refuse('unavailable', `the task kind was not saved: ${(err as Error).message}`);
    }
    this.revisions.push(r);
    return { ok: true, value: undefined };
  }

  /** Recomputes the kinds in effect and hands them to the catalogues. */
  private apply(): void {
    const kinds: Record<string, TaskKindConfig> = { ...this.o.config.taskKinds };
    for (const [name, r] of taskKindsAt(this.revisions)) {
      const spec = this.parsed.get(`${name}#${r.revision}`);
      if (spec) kinds[name] = spec;
      else if (spec === null && !Object.hasOwn(this.o.config.taskKinds, name)) delete kinds[name];
    }
    this.current = kinds;
    const fresh = kindCatalogue({ ...this.o.config, taskKinds: kinds });
    for (const c of this.o.catalogues) c.kinds = fresh.kinds;
  }
}

function refuse(
  code: TaskKindRefusal['code'],
  message: string,
  path?: string,
): { ok: false; error: TaskKindRefusal } {
  return { ok: false, error: path !== undefined ? { code, message, path } : { code, message } };
}
