import { defineConfig } from 'vite';

// A static bundle the orchestrator serves at `/` (copied into its dist/dashboard at build): relative asset paths, no
// CDN, no source maps shipped, file names hashed so they can be cached forever.
export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
    assetsInlineLimit: 0,
  },
});
