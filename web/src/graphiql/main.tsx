// GraphiQL from the project's own build (no CDN: it works offline and under the app's Content-Security-Policy).
import "graphiql/setup-workers/vite";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import "graphiql/style.css";
import "./graphiql.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

const { protocol, host } = window.location;
const fetcher = createGraphiQLFetcher({
  url: "/graphql",
  subscriptionUrl: `${protocol === "https:" ? "wss:" : "ws:"}//${host}/graphql`,
});

const DEFAULT_QUERY = `# Dynaforge's GraphQL API: every type and field is described (see the docs explorer).
# Sign in: add a header {"Authorization": "Bearer <token>"} below (a token from register, login or the demo).
query Tasks {
  tasks {
    code
    name
    currentRound {
      number
      collected
      fooled
    }
  }
}
`;

const root = document.getElementById("graphiql");
if (root) {
  root.textContent = "";
  createRoot(root).render(
    <StrictMode>
      <GraphiQL fetcher={fetcher} defaultQuery={DEFAULT_QUERY} defaultEditorToolsVisibility />
    </StrictMode>,
  );
}
