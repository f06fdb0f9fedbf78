import { InMemoryTaskKindStore } from './in-memory-task-kind-store.js';
import type { TaskKindStore } from './task-kind-store.js';
import { runTaskKindStoreContract } from './testing/index.js';

// In memory, "close and open" keeps the same object: the data lives as long as the test.
runTaskKindStoreContract('in-memory', () => {
  const store = new InMemoryTaskKindStore();
  return Promise.resolve({
    open: () => Promise.resolve<TaskKindStore>(store),
    close: () => Promise.resolve(),
  });
});
