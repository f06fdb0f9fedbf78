interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

interface Lane {
  active: number;
  queue: Waiter[];
}

/**
 * Limits concurrent calls per model name with a FIFO queue per model, so tasks share a model fairly: a task that
 * just finished a call queues behind the tasks already waiting.
 */
export class ModelLimiter {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly limitFor: (model: string) => number) {}

  /** Run `fn` once a slot for `model` is free; rejects with `signal.reason` if aborted while queued. */
  async run<T>(model: string, signal: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    await this.acquire(model, signal);
    try {
      return await fn(signal);
    } finally {
      this.release(model);
    }
  }

  /** Calls running and queued for `model` (for tests and metrics). */
  stats(model: string): { active: number; queued: number } {
    const lane = this.lanes.get(model);
    return { active: lane?.active ?? 0, queued: lane?.queue.length ?? 0 };
  }

  private lane(model: string): Lane {
    let lane = this.lanes.get(model);
    if (!lane) {
      lane = { active: 0, queue: [] };
      this.lanes.set(model, lane);
    }
    return lane;
  }

  private acquire(model: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const lane = this.lane(model);
    if (lane.active < Math.max(1, this.limitFor(model)) && lane.queue.length === 0) {
      lane.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          lane.queue = lane.queue.filter((w) => w !== waiter);
          reject(signal.reason);
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      lane.queue.push(waiter);
    });
  }

  private release(model: string): void {
    const lane = this.lane(model);
    lane.active--;
    while (lane.active < Math.max(1, this.limitFor(model))) {
      const next = lane.queue.shift();
      if (!next) break;
      next.signal.removeEventListener('abort', next.onAbort);
      lane.active++;
      next.resolve();
    }
  }
}
