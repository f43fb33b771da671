import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** The console: built into console/dist, served by the local stack at the Core API's origin. */
export default defineConfig(({ command }) => ({
  root: fileURLToPath(new URL(".", import.meta.url)),
  // A build is React's production build even when NODE_ENV says otherwise (vitest sets "test").
  ...(command === "build" ? { define: { "process.env.NODE_ENV": JSON.stringify("production") } } : {}),
  plugins: [react()],
  logLevel: "warn",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    // No inline module-preload polyfill: the CSP allows no inline script.
    modulePreload: { polyfill: false },
    // The transform editor's chunk (CodeMirror, about 515 KB before gzip) loads only on the
    // transforms pages; the budget that matters is the initial JS (test/browser/bundle-size.test.ts).
    chunkSizeWarningLimit: 600,
  },
}));
