/**
 * Version of the mod protocol this package speaks. A mod names it in `register.protocolVersion` (major must match);
 * a mod that names none (the seed's `register` has only the game version) speaks `1.0`.
 */
export const MC_PROTOCOL_VERSION = '1.0';

/** The seed's default endpoint port for mods (`ws://localhost:9876`). */
export const DEFAULT_MC_PORT = 9876;

/** How long after a disconnect a mod reconnects (the mod's side of the contract), in milliseconds. */
export const RECONNECT_DELAY_MS = 5_000;

/** How long the backend keeps a disconnected instance's state before declaring it dead, in milliseconds. */
export const INSTANCE_KEEP_MS = 30_000;

/** Default per-action timeout, in milliseconds: after it the action is failed and the task moves on. */
export const DEFAULT_ACTION_TIMEOUT_MS = 60_000;

/** Largest frame the endpoint accepts, in bytes (a bigger one is refused with `frame_too_large`). */
export const MAX_FRAME_BYTES = 256 * 1024;

/** Codes of the `error` frame the backend sends for a refused frame. */
export const MC_FRAME_ERROR_CODES = [
  'not_json',
  'frame_too_large',
  'unknown_type',
  'invalid_message',
  'not_registered',
  'instance_mismatch',
  'version_unsupported',
  'unknown_action',
  'action_closed',
  'rate_limited',
] as const;

/** One of {@link MC_FRAME_ERROR_CODES}. */
export type McFrameErrorCode = (typeof MC_FRAME_ERROR_CODES)[number];

/** Default rate limit of one mod instance's frames (the CC endpoint's default): sustained per second, and burst. */
export const DEFAULT_MC_RATE_LIMIT = { messagesPerSecond: 50, burst: 200 } as const;
