// The words and numbers of the Models screens: statuses, metric values and intervals, sizes, and live progress
// events merged over what the last query said.

/** A model's address in the app. */
export const modelHref = (code: string, id: string): string =>
  `/models/${encodeURIComponent(code)}/${encodeURIComponent(id)}`;

export type EvaluationStatus = "QUEUED" | "RUNNING" | "DONE" | "FAILED";
export type ModelStatus = "SUBMITTED" | "EVALUATING" | "DONE" | "FAILED";

export const modelStatusWords: Record<ModelStatus, string> = {
  SUBMITTED: "Waiting to start",
  EVALUATING: "Evaluating",
  DONE: "Evaluated",
  FAILED: "An evaluation failed",
};

export const evaluationStatusWords: Record<EvaluationStatus, string> = {
  QUEUED: "Queued",
  RUNNING: "Running",
  DONE: "Done",
  FAILED: "Failed",
};

/** A metric's value: three decimals for the usual shares and scores, fewer for large numbers. */
export function metricValue(value: number | null | undefined): string {
  if (value == null || !Number.isFinite(value)) return "–";
  const size = Math.abs(value);
  if (size >= 1000) return value.toFixed(0);
  if (size >= 100) return value.toFixed(1);
  return value.toFixed(3);
}

/** A 95% interval as "0.612 – 0.701"; a dash where none was computed. */
export function intervalText(interval: { low: number; high: number } | null | undefined): string {
  return interval ? `${metricValue(interval.low)} – ${metricValue(interval.high)}` : "–";
}

/** A number of bytes for people: "512 B", "3.4 KB", "12.0 MB", "1.20 GB". */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** Whether a file name is one of the archive kinds the server reads. */
export function isModelArchive(name: string): boolean {
  return /\.(tar\.gz|tgz|tar|zip)$/i.test(name);
}

/** The options or card a person typed as JSON: null when empty, or why it is not a JSON object. */
export function parseJsonObject(text: string): { value: Record<string, unknown> | null; error: string | null } {
  if (!text.trim()) return { value: null, error: null };
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== "object" || Array.isArray(value))
      return { value: null, error: 'Write a JSON object, e.g. {"max_length": 128}.' };
    return { value: value as Record<string, unknown>, error: null };
  } catch (error) {
    return { value: null, error: `This is not valid JSON: ${(error as Error).message}` };
  }
}

/** "3 of 9 evaluations done". */
export function doneCount(states: readonly { status: EvaluationStatus }[]): string {
  const done = states.filter((s) => s.status === "DONE" || s.status === "FAILED").length;
  return `${done} of ${states.length} evaluation${states.length === 1 ? "" : "s"} finished`;
}

/** What is left of a task's 24-hour submission allowance, in words: "3 of 5 submissions left in the last 24
 * hours", or, when none is, when the next one frees up. */
export function allowanceText(left: number, limit: number, nextAt: string | null | undefined): string {
  if (left > 0) return `${left} of ${limit} submission${limit === 1 ? "" : "s"} left in the last 24 hours.`;
  const next = nextAt ? new Date(nextAt) : null;
  const when = next && !Number.isNaN(next.getTime()) ? ` The next one frees up at ${next.toLocaleString()}.` : "";
  return `You made all ${limit} submission${limit === 1 ? "" : "s"} this task takes in 24 hours.${when}`;
}
