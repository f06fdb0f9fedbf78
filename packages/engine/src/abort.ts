/**
 * The abort side of one step or one command call, owned by the engine (internal, not exported).
 *
 * Two costs of a plain AbortController showed in the round-trip CPU profile, once per step and once per call:
 * creating the AbortSignal (Node builds it lazily, as a transferable object) and the `abort` event listener the engine
 * added and removed to race the strategy's or executor's promise. Here the signal is created only when someone asks
 * for it (a step that decides from memory never reads `ctx.signal`), and {@link Abort.race} is woken by a plain
 * callback instead of an event listener.
 *
 * Invariants (tested in abort.test.ts): a signal asked for after {@link Abort.abort} is already aborted with the same
 * reason; one asked for before is aborted by it; a race settles with the raced promise unless the abort comes first,
 * and then rejects with the reason; abort is idempotent (the first reason wins).
 */
export class Abort {
  private controller: AbortController | undefined;
  /** Rejects the race in progress, if any. */
  private wake: ((reason: unknown) => void) | undefined;
  private abortReason: unknown;
  private done = false;
  /** Ended by {@link settle}: the signal is never aborted. */
  private quiet = false;

  /** True once {@link abort} was called. */
  get aborted(): boolean {
    return this.done;
  }

  /** The reason given to {@link abort} (undefined before). */
  get reason(): unknown {
    return this.abortReason;
  }

  /** The AbortSignal for code outside the engine; created on first use, already aborted if this one is. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.done && !this.quiet) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** Abort: the signal (if it exists) fires first, then the race in progress rejects with `reason`. */
  abort(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
    const wake = this.wake;
    this.wake = undefined;
    wake?.(reason);
  }

  /**
   * End without aborting the signal: the race in progress rejects with `reason` and {@link aborted} turns true, but the
   * AbortSignal (given or asked for later) stays un-aborted. For a command call whose outcome was recorded normally:
   * aborting a signal dispatches an `abort` Event to every listener, and that was a visible share of the round-trip
   * CPU; the ToolExecutor contract aborts the signal only on timeout, cancellation and stop. Idempotent with
   * {@link abort} (the first ending wins).
   */
  settle(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.quiet = true;
    this.abortReason = reason;
    const wake = this.wake;
    this.wake = undefined;
    wake?.(reason);
  }

  /**
   * `p`, or a rejection with the abort reason as soon as {@link abort} is called (`p` keeps running; its result is
   * dropped). One race at a time.
   */
  race<T>(p: Promise<T>): Promise<T> {
    if (this.done) {
      p.catch(() => {});
      return Promise.reject(this.abortReason as Error);
    }
    return new Promise<T>((resolve, reject) => {
      this.wake = reject;
      p.then(
        (v) => {
          if (this.wake === reject) this.wake = undefined;
          resolve(v);
        },
        (e: unknown) => {
          if (this.wake === reject) this.wake = undefined;
          reject(e as Error);
        },
      );
    });
  }
}
