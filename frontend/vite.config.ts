import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vitest/config';

// CONCH_URL (e.g. http://127.0.0.1:7777) and CONCH_TOKEN let `npm run dev`
// talk to a running `conch serve`: /api and the event stream are proxied there
// with Host and Origin rewritten and the token sent as a bearer header, so the
// gateway's checks pass without a session cookie.
const target = process.env.CONCH_URL;
const token = process.env.CONCH_TOKEN;

export default defineConfig({
  plugins: [svelte()],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  server: target
    ? {
        proxy: {
          '/api': {
            target,
            changeOrigin: true,
            ws: true,
            headers: {
              Origin: target,
              ...(token ? { Authorization: `Bearer ${token}` } : {}),
            },
          },
        },
      }
    : {},
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
