import { defineConfig } from 'vite';

// The dashboard: Preact through esbuild's automatic JSX runtime (no plugin needed), built into
// dist/web with content-hashed asset names, which the API role serves as immutable.
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  publicDir: false,
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
    // No inline script or style anywhere: the Content-Security-Policy allows only 'self'.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
