import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // `import.meta.url` in the CJS build: the migrations are read from ../drizzle relative to the built module.
  shims: true,
});
