import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

const workspaceRoot = path.dirname(fileURLToPath(import.meta.url));

/**
 * Vitest config shared by every project: tests beside the code (`src/**\/*.test.ts`) and process-level tests under
 * `test/`, plus a JSON report in `.test-results/<project>.json` that `tools/run-tests.mjs` sums into the closing
 * `N passed, N failed` line.
 */
export function projectConfig(project: string, overrides: ViteUserConfig['test'] = {}): ViteUserConfig {
  return defineConfig({
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      reporters: [
        'default',
        ['json', { outputFile: path.join(workspaceRoot, '.test-results', `${project}.json`) }],
      ],
      testTimeout: 30_000,
      hookTimeout: 30_000,
      ...overrides,
    },
  });
}
