import type {
  CallRow,
  ClientRow,
  HistoryRow,
  QuestionRow,
  StepRow,
  TaskRow,
  ToolRow,
} from '@ccagent/store-core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as schema from './schema.js';

describe('the schema’s rows', () => {
  it('are exactly the rows @ccagent/store-core’s codec maps (guards against a column added or retyped in one store only; checked by typecheck)', () => {
    expectTypeOf<typeof schema.tasks.$inferSelect>().toEqualTypeOf<TaskRow>();
    expectTypeOf<typeof schema.steps.$inferSelect>().toEqualTypeOf<StepRow>();
    expectTypeOf<typeof schema.history.$inferSelect>().toEqualTypeOf<HistoryRow>();
    // `ord` (calls, questions): PostgreSQL's insertion order, standing in for SQLite's rowid; the codec never reads it.
    expectTypeOf<Omit<typeof schema.commandCalls.$inferSelect, 'ord'>>().toEqualTypeOf<CallRow>();
    expectTypeOf<Omit<typeof schema.questions.$inferSelect, 'ord'>>().toEqualTypeOf<QuestionRow>();
    expectTypeOf<typeof schema.clients.$inferSelect>().toEqualTypeOf<ClientRow>();
    expectTypeOf<typeof schema.modelTools.$inferSelect>().toEqualTypeOf<ToolRow>();
    expect(Object.keys(schema.tasks)).toEqual(expect.arrayContaining(['id', 'status', 'wakeAt']));
  });
});
