import { defineConfig } from 'tsup';

// One config (not an array): parallel configs sharing dist/ race on `clean`.
export default defineConfig({
  entry: { index: 'src/index.ts', main: 'src/main.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' } },
  clean: true,
  sourcemap: true,
  // `import.meta.url` (to find dist/lua) must work in the CJS build too.
  shims: true,
  target: 'node20',
  banner: { js: '#!/usr/bin/env node' },
});
