/**
 * The Minecraft side's own small settings: the active instance (the seed's `connect-instance`: a prompt without an
 * instance id goes to it) and each instance's action allow/deny lists, as one document kept by a
 * {@link McSettingsStore} — a file beside a SQLite database ({@link fileSettingsStore}), a row of the PostgreSQL
 * store, or nowhere (memory only). A change is saved before it is acknowledged (its promise resolves) and only then
 * seen by readers; changes are saved one at a time, in order, so none is lost to another.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { MinecraftError } from '../minecraft-error.js';
import { ACTION_TYPES, InstanceIdSchema } from '../protocol/messages.js';

/** One instance's lists: `allow` (only these types; absent = all), `deny` (never these). */
export const ActionPolicySchema = z.strictObject({
  allow: z.array(z.enum(ACTION_TYPES)).max(ACTION_TYPES.length).optional(),
  deny: z.array(z.enum(ACTION_TYPES)).max(ACTION_TYPES.length).optional(),
});
/** An instance's action lists. */
export type ActionPolicy = z.infer<typeof ActionPolicySchema>;

const SettingsSchema = z.object({
  active: InstanceIdSchema.nullable().default(null),
  actions: z.record(InstanceIdSchema, ActionPolicySchema).default({}),
});
type Settings = z.infer<typeof SettingsSchema>;

/**
 * Where the settings document is kept. `load` answers the saved document (null when none); `save` resolves once the
 * document is durable. `@ccagent/store-postgres`'s `PostgresStore.minecraftSettings` is one.
 */
export interface McSettingsStore {
  load(): Promise<unknown>;
  save(doc: unknown): Promise<void>;
}

/** The settings document in a JSON file: written to a temporary file, synced and renamed over it. */
export function fileSettingsStore(file: string): McSettingsStore {
  return {
    load: () => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return Promise.resolve(null);
        return Promise.reject(e as Error);
      }
      return Promise.resolve(JSON.parse(text) as unknown);
    },
    save: (doc) => {
      const tmp = `${file}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(doc, null, 2));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, file);
      return Promise.resolve();
    },
  };
}

/** The active instance and the action lists, in memory and (with a store) kept by it. */
export class InstanceSeat {
  private settings: Settings = { active: null, actions: {} };
  private loading: Promise<void> | undefined;
  /** The last change's save: the next one waits for it (one at a time, in order). */
  private saving: Promise<unknown> = Promise.resolve();

  constructor(private readonly store?: McSettingsStore) {}

  /**
   * Read the stored document (once; later calls answer the same promise). Rejects with `MinecraftError
   * ('settings_invalid')` when the stored document is not a settings document.
   */
  load(): Promise<void> {
    this.loading ??= (async () => {
      if (this.store === undefined) return;
      const doc = await this.store.load();
      if (doc === null || doc === undefined) return;
      const parsed = SettingsSchema.safeParse(doc);
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        throw new MinecraftError(
          'settings_invalid',
          `the stored Minecraft settings are not valid: ${i?.path.join('.') || '(document)'}: ${i?.message ?? ''}`,
        );
      }
      this.settings = parsed.data;
    })();
    return this.loading;
  }

  active(): string | null {
    return this.settings.active;
  }

  setActive(instanceId: string): Promise<void> {
    return this.change((s) => ({ ...s, active: instanceId }));
  }

  policy(instanceId: string): ActionPolicy | undefined {
    return this.settings.actions[instanceId];
  }

  /** Replace an instance's lists; no `allow` and an empty `deny` removes them. */
  setPolicy(instanceId: string, policy: ActionPolicy): Promise<void> {
    return this.change((s) => {
      const actions = { ...s.actions };
      if (policy.allow === undefined && (policy.deny ?? []).length === 0) delete actions[instanceId];
      else actions[instanceId] = policy;
      return { ...s, actions };
    });
  }

  /** Apply `fn` to the settings as the changes before it left them, save, then show it to readers. */
  private change(fn: (s: Settings) => Settings): Promise<void> {
    const run = this.saving.then(async () => {
      await this.load();
      const next = fn(this.settings);
      if (this.store !== undefined) await this.store.save(next);
      this.settings = next;
    });
    this.saving = run.catch(() => undefined);
    return run;
  }
}
