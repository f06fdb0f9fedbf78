import { defineConfig } from 'tsup';

export default defineConfig({
  // Two entries: the runtime API (`.`) and the test helpers (`./testing`, which imports vitest and must never be
  // pulled into the runtime bundle). Shared code goes to common chunks in ESM.
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  external: ['vitest'],
});
