// Small building blocks shared by the forms: a labelled text input with its error, and a problem box.
import type { FormEvent, InputHTMLAttributes } from "react";
import type { Problem } from "../lib/errors";

export function TextInput({
  label,
  error,
  hint,
  ...input
}: { label: string; error?: string; hint?: string } & InputHTMLAttributes<HTMLInputElement>) {
  const id = input.id ?? `in-${label.toLowerCase().replace(/\W+/g, "-")}`;
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className="control">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <input id={id} type="text" aria-invalid={error ? true : undefined} aria-describedby={described} {...input} />
      {error && (
        <p className="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** A mutation's failure, announced to screen readers as it appears. */
export function ProblemBox({ problem }: { problem: Problem | null }) {
  return (
    <div role="alert" className={problem ? "problem" : undefined}>
      {problem?.message}
    </div>
  );
}

/** An onSubmit handler that keeps the page (and what was typed: a failed submission leaves the form as it was) and
 * hands the form's data to `action`. */
export function submitted(action: (form: FormData) => unknown) {
  return (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    void action(new FormData(event.currentTarget));
  };
}
