import type { ProtocolErrorCode } from './constants.js';

/** Thrown only for programmer errors (e.g. a frame limit too small to chunk anything); parse failures are returned. */
export class ProtocolError extends Error {
  /** Stable machine-readable code. */
  readonly code: ProtocolErrorCode;

  constructor(code: ProtocolErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProtocolError';
    this.code = code;
  }
}
