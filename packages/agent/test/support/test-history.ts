import type { CommandOutcome, HistoryEntry, HistoryEntryBody, JsonValue, Task } from '@ccagent/engine';

/**
 * Builders of engine-shaped tasks and histories for unit tests of this package (not exported from the package).
 * They produce exactly the `Task`/`HistoryEntry` shapes the engine stores.
 */
export function makeTask(over: Partial<Task> = {}): Task {
  return {
    id: 't1',
    kind: 'code',
    status: 'running',
    clientId: null,
    prompt: 'Fix TODO.lua so that add, list, done, remove and stats work.',
    allowedCommands: ['fs_write', 'run_program', 'shell_exec'],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 0,
    updatedAt: 0,
    ...over,
  };
}

/** An append-only history builder that numbers entries like the engine does. */
export class HistoryBuilder {
  readonly entries: HistoryEntry[] = [];
  private callN = 0;
  step = 1;

  add(body: HistoryEntryBody): this {
    this.entries.push({
      ...body,
      taskId: 't1',
      seq: this.entries.length + 1,
      step: this.step,
      at: this.entries.length,
    });
    return this;
  }

  /** A tool call and its outcome. */
  call(command: string, args: JsonValue, outcome: CommandOutcome): this {
    const callId = `c${++this.callN}`;
    this.add({ type: 'tool_call', callId, command, args });
    this.add({ type: 'tool_result', callId, command, outcome });
    this.step++;
    return this;
  }

  /** A tool call whose result has not arrived. */
  pending(command: string, args: JsonValue): this {
    this.add({ type: 'tool_call', callId: `c${++this.callN}`, command, args });
    return this;
  }

  note(text: string): this {
    this.add({ type: 'note', text });
    this.step++;
    return this;
  }
}
