// A task's content warning (Task.contentWarning): its examples and model outputs stay hidden until the reader
// accepts it, once per task in this browser (nothing is sent to the server). The annotate and validate pages show
// the notice near their top (ContentWarningNotice); every place that shows the task's examples or outputs wraps them
// in ContentWarning, which shows them once the warning is accepted, wherever it was.
import { type ReactNode, useSyncExternalStore } from "react";

const listeners = new Set<() => void>();
const acceptedHere = new Set<string>(); // when localStorage is unavailable (private mode): this page only

function key(code: string): string {
  return `dynaforge.contentWarning.${code}`;
}

function isAccepted(code: string): boolean {
  if (acceptedHere.has(code)) return true;
  try {
    return window.localStorage.getItem(key(code)) === "accepted";
  } catch {
    return false;
  }
}

function accept(code: string) {
  acceptedHere.add(code);
  try {
    window.localStorage.setItem(key(code), "accepted");
  } catch {
    // private mode: accepted for this page only
  }
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Whether the task's examples may be shown: it has no warning, or the reader accepted it. */
export function useWarningAccepted(code: string, warning: string | null | undefined): boolean {
  return useSyncExternalStore(subscribe, () => !warning || isAccepted(code));
}

/** The warning and its button, until accepted (nothing once it is, or for a task without one). */
export function ContentWarningNotice({ code, warning }: { code: string; warning: string | null | undefined }) {
  const ok = useWarningAccepted(code, warning);
  if (ok || !warning) return null;
  return (
    <div className="notice content-warning" role="note" aria-label="Content warning">
      <p>
        <strong>Content warning.</strong> {warning}
      </p>
      <button type="button" className="secondary" onClick={() => accept(code)}>
        I understand: show the examples
      </button>
    </div>
  );
}

/** The task's examples or outputs, shown once its warning is accepted. */
export function ContentWarning({
  code,
  warning,
  children,
}: {
  code: string;
  warning: string | null | undefined;
  children: ReactNode;
}) {
  const ok = useWarningAccepted(code, warning);
  if (ok) return <>{children}</>;
  return <p className="muted small">Hidden until you accept the task&rsquo;s content warning.</p>;
}
