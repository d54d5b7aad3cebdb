/// <reference types="vitest/config" />
// Two pages: the app (index.html) and GraphiQL (graphiql.html, served by the server at /graphql). Hashed assets go
// to dist/assets/ (served with long-lived caching); the trusted-documents manifest goes beside index.html.
import { readFileSync } from "node:fs";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

/** Copies src/gql/persisted-documents.json (written by codegen) into the build, for the server to register. */
function trustedDocuments(): Plugin {
  return {
    name: "dynaforge-trusted-documents",
    apply: "build",
    generateBundle() {
      this.emitFile({
        type: "asset",
        fileName: "persisted-documents.json",
        source: readFileSync(new URL("./src/gql/persisted-documents.json", import.meta.url), "utf8"),
      });
    },
  };
}

const api = process.env.DYNAFORGE_API ?? "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react(), trustedDocuments()],
  build: {
    manifest: true,
    target: "es2022",
    // No inline scripts or data: URLs, which the server's Content-Security-Policy forbids.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: {
      input: { app: "index.html", graphiql: "graphiql.html" },
      onwarn(warning, warn) {
        // GraphiQL's React Compiler directives ("use no memo") are dropped when bundled; harmless.
        if (warning.code === "MODULE_LEVEL_DIRECTIVE") return;
        warn(warning);
      },
    },
    chunkSizeWarningLimit: 4096,
  },
  server: {
    // `npm run dev`: the API of a server running beside it (DYNAFORGE_API, default :8000).
    proxy: {
      "/graphql": { target: api, ws: true, changeOrigin: true },
      "/export": { target: api, changeOrigin: true },
      "/evaluations": { target: api, changeOrigin: true },
      "/healthz": { target: api, changeOrigin: true },
    },
  },
  test: {
    environment: "happy-dom",
    include: ["tests/**/*.test.{ts,tsx}"],
  },
});
