import { InMemoryTaskStore } from './in-memory-task-store.js';
import { runTaskStoreContract } from './testing/task-store-contract.js';

runTaskStoreContract('InMemoryTaskStore', () => Promise.resolve({ store: new InMemoryTaskStore() }));
