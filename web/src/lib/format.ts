/** A rate from 0 to 1 as a percentage; a dash before there is any. */
export function percent(rate: number | null | undefined, digits = 1): string {
  return rate == null ? "–" : `${(rate * 100).toFixed(digits)}%`;
}
