import { defineConfig } from 'vite';

// A static bundle the orchestrator serves at `/` (copied into its dist/dashboard at build): relative asset paths, no
// CDN, no source maps shipped, file names hashed so they can be cached forever.
//
// Size (the shipped files are capped at 40 KiB gzipped; `node tools/bench/dashboard/bundle.mjs --modules` shows where
// the bytes go):
// - JSX compiles to Preact's `h(type, props, ...children)` (the classic runtime): the automatic runtime's `jsx(type,
//   {...props, children: [...]})` spells a `children` array around every element's children: 560 B more
//   gzipped on this dashboard. `h` and `Fragment` are injected into every .tsx file under names no code uses (`__jsx_h`,
//   `__jsx_F`): a page's own `const h = …` would otherwise capture the JSX inside its scope (it did, in markdown.tsx).
// - No module-preload polyfill (290 B gzipped): the page is one entry script and its stylesheet, with no
//   `modulepreload` link for the polyfill to act on.
export default defineConfig({
  base: './',
  oxc: {
    jsx: { runtime: 'classic', pragma: '__jsx_h', pragmaFrag: '__jsx_F' },
    jsxInject: `import { h as __jsx_h, Fragment as __jsx_F } from 'preact'`,
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
