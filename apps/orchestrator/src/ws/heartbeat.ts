/**
 * The heartbeat: every `heartbeatMs`, a `ping` to each welcomed connection, and a connection silent for two
 * periods (no frame at all, not even a `pong`) is destroyed as dead. Replies to a client's own `ping` are in the
 * message table.
 */
import type { Clock, Logger } from '@ccagent/engine';
import type { Connection } from './connection.js';

/** Options of {@link Heartbeat}. */
export interface HeartbeatOptions {
  heartbeatMs: number;
  /** The open connections, read at each beat. */
  connections: () => Iterable<Connection>;
  clock: Clock;
  logger: Logger;
}

/** See the module comment. Starts on construction; {@link Heartbeat.stop} ends it. */
export class Heartbeat {
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: HeartbeatOptions) {
    this.timer = setInterval(() => this.beat(), o.heartbeatMs);
    this.timer.unref();
  }

  /** Stop beating (shutdown). */
  stop(): void {
    clearInterval(this.timer);
  }

  private beat(): void {
    const now = this.o.clock.now();
    const hb = this.o.heartbeatMs;
    for (const c of this.o.connections()) {
      if (c.state !== 'ready') continue;
      const silent = now - c.lastRxAt;
      if (silent > 2 * hb) {
        this.o.logger.warn(
          { client_id: c.clientId, conn: c.serial, silent_ms: silent },
          'dead socket: no pong',
        );
        c.terminate();
      } else {
        c.send({ type: 'ping', id: `hb-${now}` });
      }
    }
  }
}
