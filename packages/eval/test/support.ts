// What the suite's process-level tests share: the built orchestrator and the Lua client of this checkout, and the
// emulator (the tests are skipped with a printed notice where there is none).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findCraftos, type Craftos } from '../src/index.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** `cc-orchestrator`'s built entry and lua-client/src. */
export const ORCHESTRATOR = {
  main: path.join(repo, 'apps', 'orchestrator', 'dist', 'main.js'),
  luaDir: path.join(repo, 'lua-client', 'src'),
};

function craftosOrNone(): Craftos | undefined {
  try {
    return findCraftos();
  } catch (e) {
    // Found but broken is a failure, not a skip.
    if ((e as Error).message.includes('does not run')) throw e;
    console.log('[eval] SKIPPED: CraftOS-PC not found (set CRAFTOS_PC_DIR; see docs/eval.md)');
    return undefined;
  }
}

/** The emulator, or undefined. */
export const craftos = craftosOrNone();

/** A fresh run folder. */
export function outDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'ccagent-eval-test-'));
}
