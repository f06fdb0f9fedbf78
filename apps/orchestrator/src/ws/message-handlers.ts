/**
 * The table of WebSocket message handlers: one entry per client message type (the compiler insists every type of
 * `@ccagent/protocol`'s `ClientMessage` has one). The gateway parses a frame, checks the handshake state and calls
 * the entry for its type, one message of a connection at a time. A new message: its schema in @ccagent/protocol, its
 * handler in the file of its concern (or a new one), and one entry here.
 */
import type { ClientMessage } from '@ccagent/protocol';
import type { ScreenFrames } from '../screens/screen-frames.js';
import type { Connection } from './connection.js';
import type { Handshake } from './handshake.js';
import type { TaskSubscriptions } from './subscriptions.js';
import type { TaskRequests } from './task-requests.js';

/** Client message types the handlers see (`chunk` frames are reassembled by the gateway first). */
export type HandledType = Exclude<ClientMessage['type'], 'chunk'>;

/** The client message of one type. */
export type MessageOf<T extends HandledType> = Extract<ClientMessage, { type: T }>;

/**
 * Handles one message. `sender`: the connection's client id (undefined only for the first `hello`). A rejection is
 * answered by the gateway with an `error` carrying the message's ids (`unavailable` for a storage failure).
 */
export type MessageHandler<T extends HandledType> = (
  conn: Connection,
  msg: MessageOf<T>,
  sender: string,
) => Promise<void> | void;

/** One handler per message type. */
export type MessageHandlers = { [T in HandledType]: MessageHandler<T> };

/** The concerns the handlers live in. */
export interface HandlerParts {
  handshake: Handshake;
  requests: TaskRequests;
  subscriptions: TaskSubscriptions;
  /** The screen mirror (`screen_frame`). */
  screens: ScreenFrames;
}

/** Build the table. */
export function messageHandlers({
  handshake,
  requests,
  subscriptions,
  screens,
}: HandlerParts): MessageHandlers {
  return {
    hello: (conn, msg) => handshake.hello(conn, msg),
    create_task: (conn, msg, sender) => requests.createTask(conn, sender, msg),
    command_result: (conn, msg, sender) => requests.commandResult(conn, sender, msg),
    cancel_task: (conn, msg, sender) => requests.cancelTask(conn, sender, msg.task_id, msg.request_id),
    user_answer: (conn, msg, sender) =>
      requests.userAnswer(conn, sender, msg.task_id, msg.question_id, msg.text),
    tools_update: (conn, msg, sender) => requests.toolsUpdate(conn, sender, msg.tools),
    subscribe: (conn, msg, sender) => subscriptions.subscribe(conn, sender, msg.task_id, msg.request_id),
    unsubscribe: (_conn, msg, sender) => subscriptions.unsubscribe(sender, msg.task_id),
    ping: (conn, msg) => {
      conn.send(msg.id !== undefined ? { type: 'pong', id: msg.id } : { type: 'pong' });
    },
    pong: () => undefined,
    task_message: (conn, msg, sender) => requests.taskMessage(conn, sender, msg),
    task_event: (conn, msg, sender) => requests.taskEvent(conn, sender, msg),
    screen_frame: (conn, msg, sender) => screens.frame(conn, msg, sender),
    // A client reporting a problem with something the server sent: counted (metrics), nothing to answer.
    error: () => undefined,
  };
}
