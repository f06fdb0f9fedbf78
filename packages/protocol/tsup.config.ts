import { defineConfig } from 'tsup';

export default defineConfig({
  // constants.ts, text.ts and conversation.ts are also their own entries: `@ccagent/protocol/constants`,
  // `@ccagent/protocol/text` and `@ccagent/protocol/conversation`, without zod (see their headers).
  entry: ['src/index.ts', 'src/constants.ts', 'src/text.ts', 'src/conversation.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
