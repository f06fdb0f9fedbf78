/**
 * The shared contract suite of the `TaskKindStore` port (run-time task kinds), run by every implementation (in memory
 * here, SQLite in `@ccagent/store`, PostgreSQL in `@ccagent/store-postgres`): revisions round-trip exactly (hostile
 * text included), a taken revision number is refused with nothing written, everything survives closing and opening
 * the store, and the kinds in effect at a time are the latest revisions saved by then.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineError } from '../engine-error.js';
import { taskKindsAt, type TaskKindRevision, type TaskKindStore } from '../task-kind-store.js';

/**
 * Opens the store under test. `open` gives a fresh empty store the first time and the same data on every later call
 * (a restart); `close` closes what `open` returned; `cleanup` runs after each test.
 */
export type TaskKindStoreFactory = () => Promise<{
  open: () => Promise<TaskKindStore>;
  close: (store: TaskKindStore) => Promise<void>;
  cleanup?: () => Promise<void> | void;
}>;

const HOSTILE =
  '<script>alert(1)</script> \u001b[31mred\u001b[0m "quotes" \'single\' \\ back ✓ — 🚀 \u0000? no';

function rev(
  name: string,
  revision: number,
  savedAt: number,
  definition: TaskKindRevision['definition'],
): TaskKindRevision {
  return { name, revision, definition, savedAt, savedBy: 'operator:alice' };
}

export function runTaskKindStoreContract(label: string, factory: TaskKindStoreFactory): void {
  describe(`TaskKindStore contract: ${label}`, () => {
    let env: Awaited<ReturnType<TaskKindStoreFactory>>;
    let store: TaskKindStore;
    beforeEach(async () => {
      env = await factory();
      store = await env.open();
    });
    afterEach(async () => {
      await env.close(store);
      await env.cleanup?.();
    });

    it('starts empty', async () => {
      expect(await store.listTaskKindRevisions()).toEqual([]);
    });

    it('keeps every revision, ordered by name then revision, exactly as saved', async () => {
      const def = {
        description: HOSTILE.replace('\u0000', ''),
        strategy: 'native',
        allowedCommands: ['fs_read', 'shell_exec'],
        budgets: { maxSteps: 5, deadlineMs: 60_000 },
        nested: { list: [1, 2.5, true, null, 'x'] },
      };
      await store.appendTaskKindRevision(rev('zeta_kind', 1, 1_000, def));
      await store.appendTaskKindRevision(rev('alpha_kind', 1, 2_000, { strategy: 'chat' }));
      await store.appendTaskKindRevision(rev('alpha_kind', 2, 3_000, null));
      await store.appendTaskKindRevision({
        name: 'alpha_kind',
        revision: 3,
        definition: { strategy: 'native' },
        savedAt: 4_000,
      });
      const all = await store.listTaskKindRevisions();
      expect(all).toEqual([
        rev('alpha_kind', 1, 2_000, { strategy: 'chat' }),
        rev('alpha_kind', 2, 3_000, null),
        { name: 'alpha_kind', revision: 3, definition: { strategy: 'native' }, savedAt: 4_000 },
        rev('zeta_kind', 1, 1_000, def),
      ]);
    });

    it('refuses a revision number that is taken, and writes nothing', async () => {
      await store.appendTaskKindRevision(
        rev('builder', 1, 1_000, { strategy: 'native', description: 'first' }),
      );
      const err = await store
        .appendTaskKindRevision(rev('builder', 1, 2_000, { strategy: 'chat', description: 'second' }))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(EngineError);
      expect((err as EngineError).code).toBe('conflict');
      expect(await store.listTaskKindRevisions()).toEqual([
        rev('builder', 1, 1_000, { strategy: 'native', description: 'first' }),
      ]);
      // another kind may use the same number
      await store.appendTaskKindRevision(rev('other', 1, 2_000, { strategy: 'chat' }));
      expect((await store.listTaskKindRevisions()).map((r) => `${r.name}#${r.revision}`)).toEqual([
        'builder#1',
        'other#1',
      ]);
    });

    it('keeps the revisions across closing and opening the store', async () => {
      await store.appendTaskKindRevision(
        rev('keeper', 1, 10, { strategy: 'native', systemPrompt: HOSTILE.replace('\u0000', '') }),
      );
      await store.appendTaskKindRevision(rev('keeper', 2, 20, { strategy: 'native', systemPrompt: 'v2' }));
      await env.close(store);
      store = await env.open();
      const all = await store.listTaskKindRevisions();
      expect(all.map((r) => r.revision)).toEqual([1, 2]);
      expect(all[0]?.definition).toEqual({ strategy: 'native', systemPrompt: HOSTILE.replace('\u0000', '') });
      // the numbering goes on after a restart, and a taken number is still refused
      await expect(store.appendTaskKindRevision(rev('keeper', 2, 30, null))).rejects.toMatchObject({
        code: 'conflict',
      });
      await store.appendTaskKindRevision(rev('keeper', 3, 30, null));
      expect(taskKindsAt(await store.listTaskKindRevisions()).get('keeper')?.definition).toBeNull();
    });

    it('answers which revision was in effect at a time', async () => {
      await store.appendTaskKindRevision(rev('timed', 1, 100, { v: 1 }));
      await store.appendTaskKindRevision(rev('timed', 2, 200, { v: 2 }));
      await store.appendTaskKindRevision(rev('later', 1, 300, { v: 1 }));
      const all = await store.listTaskKindRevisions();
      expect(taskKindsAt(all, 50).size).toBe(0);
      expect(taskKindsAt(all, 150).get('timed')?.definition).toEqual({ v: 1 });
      expect(taskKindsAt(all, 200).get('timed')?.definition).toEqual({ v: 2 });
      expect([...taskKindsAt(all, 250).keys()]).toEqual(['timed']);
      expect([...taskKindsAt(all).keys()].sort()).toEqual(['later', 'timed']);
    });
  });
}
