/**
 * The Minecraft side's own small settings, kept across restarts when a file is given: the active instance (the
 * seed's `connect-instance`: a prompt without an instance id goes to it) and each instance's action allow/deny lists.
 * A change is written to a temporary file, synced and renamed over the file before it is acknowledged.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { z } from 'zod';
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

/** The active instance and the action lists, in memory and (with `file`) on disk. */
export class InstanceSeat {
  private settings: Settings = { active: null, actions: {} };

  constructor(private readonly file?: string) {
    if (file === undefined) return;
    let text: string | null = null;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      // no file yet: nothing set
    }
    if (text !== null) this.settings = SettingsSchema.parse(JSON.parse(text));
  }

  active(): string | null {
    return this.settings.active;
  }

  setActive(instanceId: string): void {
    this.write({ ...this.settings, active: instanceId });
  }

  policy(instanceId: string): ActionPolicy | undefined {
    return this.settings.actions[instanceId];
  }

  /** Replace an instance's lists; no `allow` and an empty `deny` removes them. */
  setPolicy(instanceId: string, policy: ActionPolicy): void {
    const actions = { ...this.settings.actions };
    if (policy.allow === undefined && (policy.deny ?? []).length === 0) delete actions[instanceId];
    else actions[instanceId] = policy;
    this.write({ ...this.settings, actions });
  }

  private write(next: Settings): void {
    if (this.file !== undefined) {
      const tmp = `${this.file}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(next, null, 2));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.file);
    }
    this.settings = next;
  }
}
