import { InMemoryScheduleStore } from './in-memory-schedule-store.js';
import type { ScheduleStore } from './schedules.js';
import { runScheduleStoreContract } from './testing/index.js';

// In memory, "close and open" keeps the same object: the data lives as long as the test.
runScheduleStoreContract('in-memory', () => {
  const store = new InMemoryScheduleStore();
  return Promise.resolve({
    open: () => Promise.resolve<ScheduleStore>(store),
    close: () => Promise.resolve(),
  });
});
