/**
 * The orchestrator's structured logger: pino, JSON lines on stderr (stdout carries the human-readable startup
 * summary), with `task_id`, `client_id` and `call_id` fields on the lines that concern them.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './serve-options.js';

/** Create the logger; `destination` defaults to stderr (fd 2) as JSON lines (see `pretty-log.ts` for a person's). */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'cc-orchestrator' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ fd: 2, sync: true }),
  );
}
