// The failures of a mutation, in words a person understands, placed where they happen: the schema's typed errors
// (each has a `message` written for people; InvalidInput also names the fields), or a transport failure.
import type { CombinedError } from "@urql/core";

export interface Problem {
  /** The sentence to show beside the action. */
  message: string;
  /** Sentences about single fields, by field name (the last part of FieldError.field that the form knows). */
  fields: Record<string, string>;
}

interface TypedResult {
  __typename?: string;
  message?: string;
  retryAfterSeconds?: number;
  resetsInSeconds?: number | null;
  fieldErrors?: readonly { field: readonly string[]; message: string }[];
}

/** The problem in a mutation's answer: a transport or GraphQL error, or a member of the result union other than
 * `success`; null when it succeeded. `known` are the field names the form shows. */
export function problemOf(
  error: CombinedError | undefined,
  result: TypedResult | null | undefined,
  success: string | readonly string[],
  known: readonly string[] = [],
): Problem | null {
  if (error) return { message: transportMessage(error), fields: {} };
  if (!result) return null;
  const ok = typeof success === "string" ? [success] : success;
  if (result.__typename && ok.includes(result.__typename)) return null;
  const fields: Record<string, string> = {};
  const rest: string[] = [];
  for (const fe of result.fieldErrors ?? []) {
    const name = [...fe.field].reverse().find((part) => known.includes(part));
    if (name && !fields[name]) fields[name] = fe.message;
    else rest.push(fe.message);
  }
  let message = result.message ?? "Something went wrong; try again.";
  if (result.__typename === "RateLimited" && result.retryAfterSeconds)
    message = `${message} (try again in ${Math.ceil(result.retryAfterSeconds)} s)`;
  if (result.__typename === "QuotaExceeded" && result.resetsInSeconds)
    message = `${message} (the allowance frees up in ${duration(result.resetsInSeconds)})`;
  if (rest.length) message = `${message} ${rest.join(" ")}`;
  return { message, fields };
}

/** Seconds as a person reads a wait: minutes under two hours, else hours. */
export function duration(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  return minutes < 120 ? `${minutes} min` : `${Math.round(minutes / 60)} h`;
}

/** A transport failure or an unexpected error, as a sentence. */
export function transportMessage(error: CombinedError): string {
  if (error.networkError) return "The server could not be reached; check your connection and try again.";
  const first = error.graphQLErrors[0];
  return first ? first.message : error.message;
}
