// The Dynascore, computed in the browser exactly as the server computes it (server/dynaforge/evaluation/
// dynascore.py, whose docstring explains every step and edge case), so that a board re-ranks as its sliders move
// without asking the server. The same operations in the same order give the same doubles: a board computed here
// equals the server's to the last bit, CSV included (tests/dynascore.test.ts holds figures the server computed).

export type Direction = "higher" | "lower" | "memory";

export interface Axis {
  name: string;
  direction: Direction;
}

export interface ModelScores {
  /** What ties are broken by: the board row's `key`, compared as text. */
  key: string;
  /** scores[dataset][metric]: a number, or null / absent when not measured. */
  scores: Record<string, Record<string, number | null | undefined> | undefined>;
}

export interface DynascoreRow {
  key: string;
  /** Each metric averaged over the scoring data sets (null: missing). */
  x: Record<string, number | null>;
  dynascore: number | null;
  rank: number | null;
  missing: string[];
  /** Each weighted axis's share of the Dynascore (weight × oriented value / exchange rate); empty with a gap. */
  terms: Record<string, number>;
}

export interface DynascoreBoard {
  rows: DynascoreRow[];
  amrs: Record<string, number>;
  metricWeights: Record<string, number>;
  datasetWeights: Record<string, number>;
  pairs: number;
  amrsFallback: boolean;
}

export const DEFAULT_PRINCIPAL_WEIGHT = 4;
export const DEFAULT_WEIGHT = 1;
const DELTA_CUTOFF = 1e-4;
const NOISE_CUTOFF = 1e-9;

/** Python's ordering of (number, text) keys. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** An element that is there (the indices below never run past their arrays). */
const num = (values: readonly number[], i: number): number => values[i] as number;

/** The weights a board starts from: 4 on the principal metric, 1 on every other axis, 0 on an axis no model has a
 * figure for on any data set (fairness on a task without fairness copies), as the server's defaults. */
export function defaultMetricWeights(
  axes: readonly Axis[],
  principal: string,
  models: readonly ModelScores[] = [],
): Record<string, number> {
  const measured = new Set<string>();
  for (const model of models)
    for (const values of Object.values(model.scores))
      for (const [name, value] of Object.entries(values ?? {})) if (value != null) measured.add(name);
  return Object.fromEntries(
    axes.map((a) => [
      a.name,
      a.name === principal ? DEFAULT_PRINCIPAL_WEIGHT : measured.has(a.name) ? DEFAULT_WEIGHT : 0,
    ]),
  );
}

/** The board for these weights, or a sentence saying why there is none (every weight 0). `metricWeights` covers
 * the axes it names (the others keep their default); `datasetWeights` names the scoring data sets in the order the
 * server is sent them (their total is summed in that order), those left out or weighted 0 do not count. */
export function computeBoard(
  models: readonly ModelScores[],
  axes: readonly Axis[],
  options: {
    principal: string;
    metricWeights?: Record<string, number>;
    datasetWeights: readonly (readonly [string, number])[];
    memoryBudgetGb: number;
  },
): DynascoreBoard | string {
  const { principal, memoryBudgetGb } = options;
  const names = axes.map((a) => a.name);
  const weights: Record<string, number> = defaultMetricWeights(axes, principal, models);
  for (const [name, w] of Object.entries(options.metricWeights ?? {})) if (name in weights) weights[name] = w;
  const weight = (name: string) => weights[name] ?? 0;
  if (!names.some((n) => weight(n) > 0)) return "At least one metric needs a weight above 0.";
  // The data sets in the order given, normalised by their total, then sorted by name without those weighted 0.
  const raw = options.datasetWeights;
  const dsTotal = raw.reduce((sum, [, w]) => sum + w, 0);
  if (!(dsTotal > 0)) return "At least one data set needs a weight above 0.";
  const datasets = raw
    .filter(([, w]) => w > 0)
    .map(([name, w]): [string, number] => [name, w / dsTotal])
    .sort((a, b) => byText(a[0], b[0]));

  // 1-2. Aggregate over the scoring data sets and orient.
  const scale = axes.map((a) => (a.direction !== "higher" ? -1 : 1));
  const offset = axes.map((a) => (a.direction === "memory" ? memoryBudgetGb : 0));
  const count = names.length;
  const scored = names.flatMap((name, k) => (weight(name) > 0 || name === principal ? [k] : []));
  const p = names.indexOf(principal);
  const aggregated: (number | null)[][] = models.map((model) => {
    const sums = new Array<number>(count).fill(0);
    let present = new Array<boolean>(count).fill(datasets.length > 0);
    for (const [dataset, w] of datasets) {
      const values = model.scores[dataset];
      if (values == null) {
        present = new Array<boolean>(count).fill(false);
        continue;
      }
      names.forEach((name, k) => {
        const v = values[name];
        if (v == null) present[k] = false;
        else sums[k] = num(sums, k) + w * v;
      });
    }
    return sums.map((s, k) => (present[k] ? s : null));
  });
  const oriented = aggregated.map((row) => row.map((v, k) => (v === null ? null : num(scale, k) * v + num(offset, k))));

  // 3. AMRS over the complete models, sorted by the principal metric (ties by key).
  const full = new Map<number, number[]>();
  oriented.forEach((row, i) => {
    if (scored.every((k) => row[k] != null))
      full.set(
        i,
        row.map((v) => v ?? 0),
      );
  });
  const at = (i: number, k: number) => num(full.get(i) ?? [], k);
  const key = (i: number) => models[i]?.key ?? "";
  const complete = [...full.keys()].sort((a, b) => at(a, p) - at(b, p) || byText(key(a), key(b)));
  const maxAbs = (k: number) => complete.reduce((m, i) => Math.max(m, Math.abs(at(i, k))), 0);
  const threshold = DELTA_CUTOFF * maxAbs(p);
  const noise = new Map(scored.map((k) => [k, NOISE_CUTOFF * maxAbs(k)]));
  const ratioSums = new Array<number>(count).fill(0);
  let pairs = 0;
  for (let j = 1; j < complete.length; j++) {
    const low = num(complete, j - 1);
    const high = num(complete, j);
    const step = at(high, p) - at(low, p);
    if (step > threshold) {
      pairs += 1;
      for (const k of scored) {
        const change = Math.abs(at(high, k) - at(low, k));
        if (change > (noise.get(k) ?? 0)) ratioSums[k] = num(ratioSums, k) + change / step;
      }
    }
  }
  const amrs: Record<string, number> = Object.fromEntries(
    scored.map((k) => [names[k], pairs ? num(ratioSums, k) / pairs : 1]),
  );

  // 4. The Dynascore of each complete model.
  const totalWeight = names.reduce((sum, n) => sum + weight(n), 0);
  const terms = scored
    .map((k) => ({ k, name: names[k] ?? "" }))
    .filter(({ name }) => weight(name) > 0)
    .map(({ k, name }) => ({ k, name, share: weight(name) / totalWeight, rate: amrs[name] ?? 1 }))
    .filter((t) => t.rate !== 0);
  const scores = new Map<number, number>();
  const parts = new Map<number, Record<string, number>>();
  for (const i of complete) {
    const part: Record<string, number> = {};
    let score = 0;
    for (const { k, name, share, rate } of terms) {
      const term = (share * at(i, k)) / rate;
      part[name] = term;
      score += term;
    }
    scores.set(i, score);
    parts.set(i, part);
  }
  const score = (i: number) => scores.get(i) ?? 0;
  const ranked = [...complete].sort((a, b) => score(b) - score(a) || byText(key(a), key(b)));
  const principalOf = (i: number) => oriented[i]?.[p] ?? null;
  const gapped = oriented.flatMap((_, i) => (scores.has(i) ? [] : [i]));
  gapped.sort((a, b) => {
    const pa = principalOf(a);
    const pb = principalOf(b);
    if ((pa === null) !== (pb === null)) return pa === null ? 1 : -1;
    return -(pa ?? 0) - -(pb ?? 0) || byText(key(a), key(b));
  });
  const rowOf = (i: number, rank: number | null): DynascoreRow => {
    const x = aggregated[i] ?? [];
    return {
      key: key(i),
      x: Object.fromEntries(names.map((n, k) => [n, x[k] ?? null])),
      dynascore: scores.has(i) ? score(i) : null,
      rank,
      missing: names.filter((_, k) => x[k] == null),
      terms: parts.get(i) ?? {},
    };
  };
  const rows: DynascoreRow[] = [];
  let previous: [number, number] | null = null;
  ranked.forEach((i, index) => {
    const rank: number = previous !== null && previous[0] === score(i) ? previous[1] : index + 1;
    previous = [score(i), rank];
    rows.push(rowOf(i, rank));
  });
  for (const i of gapped) rows.push(rowOf(i, null));
  return {
    rows,
    amrs,
    metricWeights: Object.fromEntries(names.map((n) => [n, weight(n) / totalWeight])),
    datasetWeights: Object.fromEntries(datasets),
    pairs,
    amrsFallback: pairs === 0,
  };
}
