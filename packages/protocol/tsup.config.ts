import { defineConfig } from 'tsup';

export default defineConfig({
  // constants.ts and text.ts are also their own entries: `@ccagent/protocol/constants` and `@ccagent/protocol/text`,
  // without zod (see their headers).
  entry: ['src/index.ts', 'src/constants.ts', 'src/text.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
