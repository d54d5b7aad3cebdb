// The tutorial, loaded only for the people who meet it: it stays out of an annotate page's first load (W1).
import { lazy, Suspense } from "react";

const Loaded = lazy(() => import("./Tutorial").then((m) => ({ default: m.Tutorial })));

export function TutorialLazy(props: { code: string; what: string; warning: string | null; onPassed: () => void }) {
  return (
    <Suspense fallback={<p className="muted">Loading the tutorial…</p>}>
      <Loaded {...props} />
    </Suspense>
  );
}
