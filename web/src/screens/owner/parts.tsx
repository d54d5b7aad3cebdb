// Building blocks of the owner pages: a mutation run with its problem kept beside the action, labelled controls
// the shared Form module does not have (select, checkbox, text area, file), and dates for people.

import type { CombinedError } from "@urql/core";
import { type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes, useState } from "react";
import { type Problem, problemOf } from "../../lib/errors";

/** A mutation's outcome kept for the action's own place on the page: the problem (or null), and what it said when
 * it worked. */
export function useOutcome() {
  const [problem, setProblem] = useState<Problem | null>(null);
  const [done, setDone] = useState("");
  return {
    problem,
    done,
    /** Records an answer; returns true when it succeeded. */
    record(
      error: CombinedError | undefined,
      result: Parameters<typeof problemOf>[1],
      success: string | readonly string[],
      message: string,
      known: readonly string[] = [],
    ): boolean {
      const failed = problemOf(error, result, success, known);
      setProblem(failed);
      setDone(failed ? "" : message);
      return !failed;
    },
    fail(message: string) {
      setProblem({ message, fields: {} });
      setDone("");
    },
    succeed(message: string) {
      setProblem(null);
      setDone(message);
    },
  };
}

/** What an action said: its success in a status region, its failure in an alert. */
export function Outcome({ outcome }: { outcome: ReturnType<typeof useOutcome> }) {
  return (
    <>
      <p role="status" className="done">
        {outcome.done}
      </p>
      <div role="alert" className={outcome.problem ? "problem" : undefined}>
        {outcome.problem?.message}
      </div>
    </>
  );
}

export { AskTwice } from "../AskTwice";

export function Select({
  label,
  id,
  children,
  ...select
}: { label: string; id: string; children: ReactNode } & SelectHTMLAttributes<HTMLSelectElement>) {
  return (
    <div className="control">
      <label htmlFor={id}>{label}</label>
      <select id={id} {...select}>
        {children}
      </select>
    </div>
  );
}

export function Checkbox({
  label,
  id,
  hint,
  ...input
}: { label: string; id: string; hint?: string } & React.InputHTMLAttributes<HTMLInputElement>) {
  return (
    <div className="control check">
      <input type="checkbox" id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
    </div>
  );
}

export function TextArea({
  label,
  id,
  error,
  hint,
  ...area
}: { label: string; id: string; error?: string; hint?: string } & TextareaHTMLAttributes<HTMLTextAreaElement>) {
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className="control">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} rows={3} aria-invalid={error ? true : undefined} aria-describedby={described} {...area} />
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p className="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

export function FileInput({
  label,
  id,
  hint,
  accept,
  required = true,
}: {
  label: string;
  id: string;
  hint?: string;
  accept?: string;
  required?: boolean;
}) {
  return (
    <div className="control">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <input
        type="file"
        id={id}
        name="file"
        accept={accept}
        required={required}
        aria-describedby={hint ? `${id}-hint` : undefined}
      />
    </div>
  );
}

/** A date and time for people, in the browser's locale. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A date and time in short ("11/26/26, 6:08 AM"), for crowded tables. */
export function shortWhen(iso: string | null | undefined): string {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? iso
    : date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}

/** The file a form's `file` input holds, or null when none was chosen. */
export function fileOf(form: FormData): File | null {
  const file = form.get("file");
  return file instanceof File && file.name ? file : null;
}

/** The text of a form field, trimmed. */
export function textOf(form: FormData, name: string): string {
  return String(form.get(name) ?? "").trim();
}
