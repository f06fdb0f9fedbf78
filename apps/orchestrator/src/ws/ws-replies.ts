/**
 * What the WebSocket side answers with besides a handler's own replies: `error` messages (counted in the metrics by
 * code) carrying the ids of the request they are about, and the mapping of a task operation's refusal to a protocol
 * error code.
 */
import type { TaskOperationError } from '@ccagent/engine';
import type { ErrorMessage, ProtocolErrorCode, ServerMessage } from '@ccagent/protocol';
import type { Metrics } from '../metrics.js';
import type { RefusalLog } from '../refusal-log.js';
import type { Connection } from './connection.js';

/** Ids and path an `error` may carry. */
export interface ErrorExtra {
  request_id?: string;
  call_id?: string;
  task_id?: string;
  path?: string;
}

/** See the module comment. */
export class WsReplies {
  constructor(
    private readonly metrics: Metrics,
    private readonly refusals?: RefusalLog,
  ) {}

  /** Send any message; an `error` is counted by code. */
  send(conn: Connection, msg: ErrorMessage | ServerMessage): void {
    if (msg.type === 'error') this.metrics.errorOut(msg.code);
    conn.send(msg);
  }

  /** Send an `error`. */
  error(conn: Connection, code: ProtocolErrorCode, message: string, extra: ErrorExtra = {}): void {
    this.send(conn, { type: 'error', code, message, ...extra });
  }

  /**
   * Send the `error` for a frame refused from a connection (malformed, or a `command_result` the server does not take),
   * and, once the connection has said who it is, log which client sent it (once per client and code a minute; the
   * metric counts every one).
   */
  refused(
    conn: Connection,
    what: string,
    code: ProtocolErrorCode,
    message: string,
    extra: ErrorExtra = {},
  ): void {
    this.error(conn, code, message, extra);
    if (conn.clientId === undefined || !this.refusals) return;
    this.refusals.refused({
      clientId: conn.clientId,
      what,
      code,
      message,
      ...(extra.call_id !== undefined ? { callId: extra.call_id } : {}),
      ...(extra.task_id !== undefined ? { taskId: extra.task_id } : {}),
    });
  }

  /** Send the `error` for a refused task operation. */
  serviceError(
    conn: Connection,
    error: TaskOperationError,
    ids: { request_id?: string; task_id?: string },
  ): void {
    const code: ProtocolErrorCode =
      error.code === 'conflict' ? 'forbidden' : error.code === 'internal' ? 'internal' : error.code;
    this.error(conn, code, error.message, {
      ...ids,
      ...(error.path !== undefined ? { path: error.path } : {}),
    });
  }
}
