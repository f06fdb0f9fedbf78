/**
 * SQLite's storage conditions: which `SqliteError` codes mean the storage cannot be used right now, and the message
 * a person reads about each (the condition codes themselves are `@ccagent/store-core`'s).
 */
import type { StorageFailureCode } from '@ccagent/store-core';

/**
 * The storage condition behind an error from SQLite (`SqliteError` codes), or undefined when it is not one:
 * `SQLITE_BUSY*`/`SQLITE_LOCKED*` → `locked`, `SQLITE_FULL` → `disk_full`, I/O, read-only, permission, corruption
 * and can't-open errors → `io_error`.
 */
export function storageFailureCode(err: unknown): StorageFailureCode | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'locked';
  if (code === 'SQLITE_FULL') return 'disk_full';
  if (
    code.startsWith('SQLITE_IOERR') ||
    code.startsWith('SQLITE_READONLY') ||
    code.startsWith('SQLITE_CANTOPEN') ||
    code.startsWith('SQLITE_CORRUPT') ||
    code === 'SQLITE_NOTADB' ||
    code === 'SQLITE_PERM'
  ) {
    return 'io_error';
  }
  return undefined;
}

/** A message for people about a storage failure (what is wrong and what to do). */
export function storageFailureMessage(code: StorageFailureCode, cause: unknown, waitedMs?: number): string {
  const detail = cause instanceof Error ? cause.message : String(cause);
  switch (code) {
    case 'locked':
      return `database is locked by another process${waitedMs !== undefined ? ` (waited ${Math.round(waitedMs)} ms for it)` : ''}; close the other program using the file (a second server, a sqlite3 shell, a backup) — work resumes once it lets go`;
    case 'disk_full':
      return `disk is full: the database cannot be written (${detail}); free space on the disk holding it — work resumes by itself`;
    case 'io_error':
      return `storage error: the database cannot be written or read (${detail})`;
  }
}
