/** Stable codes of {@link MinecraftError}. */
export type MinecraftErrorCode =
  | 'invalid_config'
  | 'listen_failed'
  | 'unknown_instance'
  | 'instance_dead'
  | 'action_failed'
  | 'action_timeout'
  | 'stopped'
  | 'plan_invalid'
  | 'model_failed'
  | 'bridge_failed'
  | 'settings_invalid'
  | 'closed';

/** The one error class of `@ccagent/minecraft`; `code` is stable, `cause` keeps the original error. */
export class MinecraftError extends Error {
  /** Stable machine-readable code. */
  readonly code: MinecraftErrorCode;

  constructor(code: MinecraftErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MinecraftError';
    this.code = code;
  }
}

/** True when `e` is a {@link MinecraftError} (with an optional code). */
export function isMinecraftError(e: unknown, code?: MinecraftErrorCode): e is MinecraftError {
  return e instanceof MinecraftError && (code === undefined || e.code === code);
}
