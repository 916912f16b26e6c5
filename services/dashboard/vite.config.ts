import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the edge at /dashboard/ (services/edge/src/routes/dashboard/static.ts): hashed names under assets/ are
// cached for a year, index.html never. No inline script or style survives the build (the page's CSP forbids both).
export default defineConfig({
  base: '/dashboard/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    target: 'es2022',
    // Everything is a separate hashed file, never a data: URL inlined into CSS or JS.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
