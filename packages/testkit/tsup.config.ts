import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    clean: false, // two configs build in parallel: neither may wipe the other's output
    sourcemap: true,
    target: 'node20',
  },
  {
    // The standalone `fake-ollama` bin (package.json `bin` → ./dist/bin.js).
    entry: ['src/bin.ts'],
    format: ['esm'],
    dts: false,
    clean: false,
    sourcemap: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
