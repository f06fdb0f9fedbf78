import { defineConfig } from 'tsup';

export default defineConfig({
  // ESM only: the runner finds the suite and its Lua files beside the package through import.meta.url.
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
