import { createHash } from 'node:crypto';
import type { Decision, DecisionRecord, JsonValue } from './types.js';

/**
 * JSON text of task memories by object. Committed values are immutable by the ports' contract (the engine copies
 * before it changes anything, strategies get them read-only, stores keep what they are given), so the text of one
 * memory object never changes and is computed once: a command round trip commits the same memory object twice
 * (the result, then the next decision) and fingerprints it for the decision record.
 */
const texts = new WeakMap<object, string>();

/**
 * The JSON text of a task memory (`JSON.stringify`; `undefined` reads as `null`), computed once per object and
 * reused afterwards. The object must not be changed after it is first encoded (see `TaskStore.commit`).
 */
export function memoryJson(memory: JsonValue | undefined): string {
  if (typeof memory !== 'object' || memory === null) return JSON.stringify(memory ?? null);
  let text = texts.get(memory);
  if (text === undefined) {
    text = JSON.stringify(memory);
    texts.set(memory, text);
  }
  return text;
}

/**
 * The `directive` of a `decision` step record: the decision without its `memory` — the task row holds the current
 * memory, and copying it into every record made the step log grow as O(steps × memory) — plus, when the decision
 * set a memory, its size, SHA-256 and whether it differs from `previousMemory` (the memory the step started from).
 */
export function decisionRecord(decision: Decision, previousMemory: JsonValue | undefined): DecisionRecord {
  if (decision.memory === undefined) {
    if (!('memory' in decision)) return decision as DecisionRecord;
    const { memory: _none, ...kept } = decision;
    return kept as DecisionRecord;
  }
  const { memory, ...rest } = decision;
  const text = memoryJson(memory);
  return {
    ...rest,
    memoryBytes: Buffer.byteLength(text, 'utf8'),
    memorySha256: createHash('sha256').update(text).digest('hex'),
    memoryChanged: text !== memoryJson(previousMemory),
  } as DecisionRecord;
}
