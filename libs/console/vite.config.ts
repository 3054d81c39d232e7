import { defineConfig } from 'vite';

// Served by the coordinator under /ui/: asset URLs are relative to that base. Preact's JSX
// runtime through Vite's own transform (no plugin needed).
export default defineConfig({
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
});
