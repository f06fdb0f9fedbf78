import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
  external: ['mineflayer', 'mineflayer-pathfinder'],
  // import.meta.url in the CJS build: prompts are read from ../prompts relative to the built module.
  shims: true,
});
