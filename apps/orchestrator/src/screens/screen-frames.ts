/** The WebSocket side of the screen mirror: a `screen_frame` goes to the hub; a frame that does not fit is refused. */
import type { ScreenFrameMessage } from '@ccagent/protocol';
import type { Connection } from '../ws/connection.js';
import type { WsReplies } from '../ws/ws-replies.js';
import type { ScreenHub } from './screen-hub.js';

/** Handles `screen_frame` messages (see message-handlers.ts). */
export class ScreenFrames {
  constructor(
    private readonly hub: ScreenHub,
    private readonly replies: WsReplies,
  ) {}

  /** Apply the frame, or answer the structured refusal (nothing changes then). */
  frame(conn: Connection, msg: ScreenFrameMessage, sender: string): void {
    const r = this.hub.apply(sender, conn.serial, msg);
    if (!r.ok) {
      this.replies.refused(
        conn,
        'screen_frame',
        r.code,
        r.message,
        r.path !== undefined ? { path: r.path } : {},
      );
    }
  }
}
