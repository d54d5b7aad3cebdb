import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App, preloadScreen } from "./App";
import { AuthProvider } from "./lib/auth";
import "./style.css";

const root = document.getElementById("root");
// The current page's screen first (its chunk was requested by nothing yet), so that it mounts at once; a failed
// load still renders, and the screen's own lazy load reports the failure.
function render(element: HTMLElement) {
  createRoot(element).render(
    <StrictMode>
      <AuthProvider>
        <App />
      </AuthProvider>
    </StrictMode>,
  );
}
if (root) {
  preloadScreen(window.location.pathname)
    .catch(() => undefined)
    .finally(() => render(root));
}
