// GraphiQL from the project's own build (no CDN: it works offline and under the app's Content-Security-Policy).
import "graphiql/setup-workers/vite";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import "graphiql/style.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

const { protocol, host } = window.location;
const fetcher = createGraphiQLFetcher({
  url: "/graphql",
  subscriptionUrl: `${protocol === "https:" ? "wss:" : "ws:"}//${host}/graphql`,
});

const root = document.getElementById("graphiql");
if (root) {
  root.textContent = "";
  createRoot(root).render(
    <StrictMode>
      <GraphiQL fetcher={fetcher} defaultEditorToolsVisibility />
    </StrictMode>,
  );
}
