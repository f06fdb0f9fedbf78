/** The `TaskKindStore` port in memory (tests, and an orchestrator without a database file). */
import { EngineError } from './engine-error.js';
import type { TaskKindRevision, TaskKindStore } from './task-kind-store.js';

/** Run-time task kinds held in this process only. */
export class InMemoryTaskKindStore implements TaskKindStore {
  private readonly revisions: TaskKindRevision[] = [];

  appendTaskKindRevision(revision: TaskKindRevision): Promise<void> {
    if (this.revisions.some((r) => r.name === revision.name && r.revision === revision.revision)) {
      return Promise.reject(
        new EngineError('conflict', `task kind ${revision.name} already has revision ${revision.revision}`, {
          details: { name: revision.name, revision: revision.revision },
        }),
      );
    }
    this.revisions.push(structuredClone(revision));
    return Promise.resolve();
  }

  listTaskKindRevisions(): Promise<TaskKindRevision[]> {
    return Promise.resolve(
      structuredClone(this.revisions).sort((a, b) =>
        a.name === b.name ? a.revision - b.revision : a.name < b.name ? -1 : 1,
      ),
    );
  }
}
