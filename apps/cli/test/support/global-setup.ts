/**
 * Vitest global setup: writes the fixture database once (a real run, see fixture-db.ts) and provides its path to
 * every test file. `CCAGENT_CLI_FIXTURE_DB=/path/x.db` writes it there and keeps it (used to produce docs/cli.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { writeFixtureDb } from './fixture-db.js';
import { writeNativeFixtureDb } from './native-fixture-db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    fixtureDb: string;
    /** A database with one native tool-calling task (see native-fixture-db.ts). */
    nativeFixtureDb: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const keep = process.env.CCAGENT_CLI_FIXTURE_DB;
  const dir = keep ? undefined : mkdtempSync(path.join(tmpdir(), 'ccagent-cli-fixture-'));
  const file = keep ? path.resolve(keep) : path.join(dir as string, 'fixture.db');
  if (keep) for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  await writeFixtureDb(file);
  project.provide('fixtureDb', file);
  const nativeDir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-native-'));
  const nativeFile = path.join(nativeDir, 'native.db');
  await writeNativeFixtureDb(nativeFile);
  project.provide('nativeFixtureDb', nativeFile);
  return () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    rmSync(nativeDir, { recursive: true, force: true });
  };
}
