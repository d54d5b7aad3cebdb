// An action that cannot be undone, asked twice in place (the app's one way of asking before such an action): its
// button, then the question with the confirming button beside "Keep it". No browser dialog.
import { type ReactNode, useState } from "react";

/** ``label`` names the first button for assistive technology; ``question`` (optional) says what happens; the
 * ``confirm`` button acts: it calls ``onConfirm``, or, with ``submit``, submits the form it is in. */
export function AskTwice({
  label,
  confirm,
  busy,
  onConfirm,
  question,
  submit = false,
  className = "secondary danger",
  children,
}: {
  label: string;
  confirm: string;
  busy: boolean;
  onConfirm?: () => void;
  question?: string;
  submit?: boolean;
  className?: string;
  children: ReactNode;
}) {
  const [asking, setAsking] = useState(false);
  return asking ? (
    <>
      {question && <span className="ask">{question} </span>}
      <button
        type={submit ? "submit" : "button"}
        className="danger"
        disabled={busy}
        onClick={() => {
          setTimeout(() => setAsking(false)); // after a submit has read the form
          if (!submit) onConfirm?.();
        }}
      >
        {confirm}
      </button>{" "}
      <button type="button" className="secondary" onClick={() => setAsking(false)}>
        Keep it
      </button>
    </>
  ) : (
    <button type="button" className={className} disabled={busy} aria-label={label} onClick={() => setAsking(true)}>
      {children}
    </button>
  );
}
