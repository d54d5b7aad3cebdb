// A task's content warning (Task.contentWarning): its model outputs stay hidden until the reader accepts it. The
// choice is kept per task in this browser; nothing is sent to the server.
import { type ReactNode, useState } from "react";

function key(code: string): string {
  return `dynaforge.contentWarning.${code}`;
}

function accepted(code: string): boolean {
  try {
    return window.localStorage.getItem(key(code)) === "accepted";
  } catch {
    return false;
  }
}

export function ContentWarning({
  code,
  warning,
  children,
}: {
  code: string;
  warning: string | null | undefined;
  children: ReactNode;
}) {
  const [ok, setOk] = useState(() => !warning || accepted(code));
  if (ok) return <>{children}</>;
  return (
    <div className="notice content-warning" role="note">
      <p>
        <strong>Content warning.</strong> {warning}
      </p>
      <button
        type="button"
        className="secondary"
        onClick={() => {
          try {
            window.localStorage.setItem(key(code), "accepted");
          } catch {
            // private mode: accepted for this page only
          }
          setOk(true);
        }}
      >
        Show the model's outputs
      </button>
    </div>
  );
}
