import { defineConfig } from 'tsup';

export default defineConfig({
  // constants.ts is also its own entry: `@ccagent/protocol/constants`, the lists without zod (see its header).
  entry: ['src/index.ts', 'src/constants.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
