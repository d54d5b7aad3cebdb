// A round's analytics in the browser: the periods with the gaps filled for a chart, and the CSV files owners
// download (written with the same quoting and formula guard as the leaderboard's).
import { safeCell, toCsv } from "./csv";

export interface Period {
  start: string;
  end: string;
  collected: number;
  fooled: number;
  verifiedFooled: number;
}

export interface AnnotatorRow {
  user: { username: string };
  stats: { collected: number; fooled: number; verifiedFooled: number; vmer?: number | null };
  medianTimeTakenMs?: number | null;
  validations: number;
  validationAgreement?: number | null;
}

/** At most this many periods are drawn: a longer span is shown by day. */
export const MAX_DRAWN = 24 * 14;

/** The periods from the first to the last, the empty ones between them added with zeros (the server lists only
 * periods with something in them); unchanged when that would make more than ``MAX_DRAWN``. */
export function fillGaps(periods: readonly Period[]): Period[] {
  const first = periods[0];
  const last = periods[periods.length - 1];
  if (!first || !last) return [];
  const width = Date.parse(first.end) - Date.parse(first.start);
  const count = Math.round((Date.parse(last.start) - Date.parse(first.start)) / width) + 1;
  if (!(width > 0) || count > MAX_DRAWN) return [...periods];
  const byStart = new Map(periods.map((p) => [Date.parse(p.start), p]));
  return Array.from({ length: count }, (_, i) => {
    const start = Date.parse(first.start) + i * width;
    return (
      byStart.get(start) ?? {
        start: new Date(start).toISOString(),
        end: new Date(start + width).toISOString(),
        collected: 0,
        fooled: 0,
        verifiedFooled: 0,
      }
    );
  });
}

/** The periods as CSV: start, end (ISO 8601, UTC), collected, fooled, verified_fooled. */
export function periodsCsv(periods: readonly Period[]): string {
  return toCsv([
    ["start", "end", "collected", "fooled", "verified_fooled"],
    ...periods.map((p) => [p.start, p.end, String(p.collected), String(p.fooled), String(p.verifiedFooled)]),
  ]);
}

/** The annotators as CSV, one row each; empty cells where a figure does not exist yet. */
export function annotatorsCsv(rows: readonly AnnotatorRow[]): string {
  const figure = (n: number | null | undefined) => (n == null ? "" : String(n));
  return toCsv([
    [
      "username",
      "collected",
      "fooled",
      "verified_fooled",
      "vmer",
      "median_time_taken_ms",
      "validations",
      "validation_agreement",
    ],
    ...rows.map((a) => [
      safeCell(a.user.username),
      String(a.stats.collected),
      String(a.stats.fooled),
      String(a.stats.verifiedFooled),
      figure(a.stats.vmer),
      figure(a.medianTimeTakenMs),
      String(a.validations),
      figure(a.validationAgreement),
    ]),
  ]);
}
