import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'bridge-bin': 'src/bridge-bin.ts',
    'conformance-bin': 'src/conformance-bin.ts',
  },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' } },
  clean: true,
  sourcemap: true,
  target: 'node20',
  external: ['mineflayer', 'mineflayer-pathfinder', 'flying-squid'],
  // import.meta.url in the CJS build: prompts are read from ../prompts relative to the built module.
  shims: true,
});
