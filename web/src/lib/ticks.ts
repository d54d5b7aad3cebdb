/** Round tick values (steps of 1, 2 or 5 times a power of ten) covering [low, high], about `count` of them, and
 * the domain they span (from the first tick to the last). */
export function niceTicks(low: number, high: number, count = 5): { ticks: number[]; domain: [number, number] } {
  if (!(high > low)) return niceTicks(low, low + (Math.abs(low) || 1), count);
  const rough = (high - low) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const first = Math.floor(low / step + 1e-9) * step;
  const last = Math.ceil(high / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let i = 0; first + i * step <= last + step / 2; i++) ticks.push(Number((first + i * step).toPrecision(12)));
  return { ticks, domain: [first, ticks[ticks.length - 1] ?? last] };
}
