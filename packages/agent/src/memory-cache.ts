import type { JsonValue } from '@ccagent/engine';

/**
 * Validation of task memories, done once per memory object. The engine hands a strategy the same memory object step
 * after step until a decision replaces it, and committed values are immutable by the engine's port contract, so a
 * memory object that was validated once (or that the strategy built itself from validated data) need not be
 * validated again: re-running the zod schema over kilobytes of memory on every step was a visible share of a command
 * round trip. A new object — another memory, the same memory read back after a restart, a copy with a change — is
 * validated when first seen.
 */
export class MemoryValidationCache<T extends object> {
  private readonly known = new WeakMap<object, T>();
  private count = 0;

  /** `validate` turns any stored value into a valid memory (a fresh one when it is not valid). */
  constructor(private readonly validate: (value: JsonValue | undefined) => T) {}

  /** How many times `validate` ran (for tests). */
  get validations(): number {
    return this.count;
  }

  /**
   * The validated memory of `value`: the cached one when this object was seen before. Read-only: it may be shared
   * with the engine's task and later steps.
   */
  get(value: JsonValue | undefined): T {
    if (typeof value !== 'object' || value === null) {
      this.count++;
      return this.validate(value);
    }
    let memory = this.known.get(value);
    if (memory === undefined) {
      this.count++;
      memory = this.validate(value);
      this.known.set(value, memory);
    }
    return memory;
  }

  /** Record that `value` — a memory the strategy built from validated, typed data — is valid as `memory`. */
  remember(value: object, memory: T): void {
    this.known.set(value, memory);
  }
}
