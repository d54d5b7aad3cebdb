// The words and numbers of retraining: a registered model's lineage in a sentence, estimates with their intervals,
// a recipe's hyper-parameters as typed form inputs, the typed errors of trainCandidateModel by field, and a training
// job's live state merged over what the last query said.

export type ModelOrigin = "SHIPPED" | "STORE" | "CONFIGURED" | "TRAINED";
export type TrainingStatus = "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";
export type DatasetSplit = "TRAIN" | "DEV" | "TEST";

export const originWords: Record<ModelOrigin, string> = {
  SHIPPED: "shipped with the task's plugin",
  STORE: "trained by an operator into the model store",
  CONFIGURED: "configured (an endpoint or backend settings)",
  TRAINED: "trained on the platform",
};

/** The origins in a word or two, for a table's column. */
export const originLabels: Record<ModelOrigin, string> = {
  SHIPPED: "shipped",
  STORE: "model store",
  CONFIGURED: "configured",
  TRAINED: "trained here",
};

export const trainingStatusWords: Record<TrainingStatus, string> = {
  QUEUED: "Queued",
  RUNNING: "Running",
  SUCCEEDED: "Succeeded",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};

/** Whether a job may still move (and be cancelled). */
export const isActive = (status: TrainingStatus): boolean => status === "QUEUED" || status === "RUNNING";

/** The first 12 hex digits of a weights digest ("sha256:" dropped); null when the model has no stored weights. */
export function shortDigest(weights: string | null | undefined): string | null {
  if (!weights) return null;
  return weights.replace(/^sha256:/i, "").slice(0, 12);
}

/** A figure with two decimals under 100 (shares, scores), one above. */
export function figure(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(1) : value.toFixed(2);
}

/** An estimate with its interval, "0.82 [0.71–0.90]"; "—" when there is none yet. */
export function estimateText(
  estimate: { value: number; low?: number | null; high?: number | null } | null | undefined,
) {
  if (!estimate || !Number.isFinite(estimate.value)) return "—";
  const { value, low, high } = estimate;
  return low != null && high != null ? `${figure(value)} [${figure(low)}–${figure(high)}]` : figure(value);
}

/** What RegisteredModel.trainingData says (the parts a sentence needs); null for a model not trained here. */
export interface TrainingData {
  datasets: readonly { name: string; size?: number | null }[];
  examples?: number | null;
  baseData: boolean;
}

/** The part of a registry entry the lineage sentence needs. */
export interface Lineage {
  origin: ModelOrigin;
  recipe?: string | null;
  trainingData?: TrainingData | null;
  parent?: { name: string } | null;
}

/** "from r1-train, r2-train (24 examples) and the base data"; empty when it was not trained on the platform's data. */
export function trainedFrom(data: TrainingData | null | undefined): string {
  if (!data) return "";
  const names = data.datasets.map((d) => d.name);
  if (!names.length && !data.baseData) return "";
  const count = data.examples == null ? "" : ` (${data.examples} example${data.examples === 1 ? "" : "s"})`;
  if (!names.length) return `from the base data${count}`;
  return `from ${names.join(", ")}${count}${data.baseData ? " and the base data" : ""}`;
}

/** Where a registered model came from, in a sentence: "trained on the platform from r1-train (24 examples),
 * parent keyword". */
export function lineageText(model: Lineage): string {
  const parts = [originWords[model.origin] ?? model.origin.toLowerCase()];
  if (model.origin === "TRAINED") {
    const from = trainedFrom(model.trainingData);
    if (from) parts[0] = `${parts[0]} ${from}`;
  }
  if (model.parent) parts.push(`parent ${model.parent.name}`);
  return parts.join(", ");
}

// ------------------------------------------------------------------ hyper-parameters

export type HyperValue = boolean | number | string;
export type HyperKind = "boolean" | "integer" | "number" | "text";

/** The input a default calls for: a checkbox, a number, or text (JSON cannot tell 2 from 2.0: see kindsOf). */
export function hyperKind(value: unknown): HyperKind {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return "number";
  return "text";
}

const typeKinds: Record<string, HyperKind> = { BOOLEAN: "boolean", INTEGER: "integer", NUMBER: "number" };

/** The kind of each hyper-parameter from TrainingRecipe.parameters (its declared type: INTEGER is a whole number). */
export function kindsOf(parameters: readonly { name: string; type: string }[] | null | undefined) {
  const kinds: Record<string, HyperKind> = {};
  for (const p of parameters ?? []) kinds[p.name] = typeKinds[p.type] ?? "text";
  return kinds;
}

/** A recipe's hyper-parameters (a JSON object of defaults) as [name, default] pairs, in the recipe's order. */
export function hyperparameterEntries(json: unknown): [string, HyperValue][] {
  if (!json || typeof json !== "object" || Array.isArray(json)) return [];
  return Object.entries(json as Record<string, unknown>).map(([name, value]) => [
    name,
    typeof value === "boolean" || typeof value === "number" || typeof value === "string"
      ? value
      : JSON.stringify(value),
  ]);
}

/** Typed parameter values (ParameterValue: the field of its type is set) as name and value, in their order; a value
 * left unset shows as "null". */
export function parameterEntries(
  values: readonly {
    name: string;
    boolean?: boolean | null;
    integer?: number | null;
    number?: number | null;
    string?: string | null;
  }[],
): [string, HyperValue][] {
  return values.map((v) => [v.name, v.boolean ?? v.integer ?? v.number ?? v.string ?? "null"]);
}

/** A default as the recipe list shows it. */
export function hyperText(value: HyperValue): string {
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return value === "" ? '""' : value;
  return String(value);
}

/** The name of a hyper-parameter's form control. */
export const hyperField = (name: string): string => `hyperparameters.${name}`;

/** The hyper-parameters a form holds, typed by ``kinds`` (the recipe's declared types) or else by their defaults,
 * and a sentence for each value that is not of its type. An empty number keeps the default. */
export function readHyperparameters(
  form: FormData,
  defaults: readonly [string, HyperValue][],
  kinds: Record<string, HyperKind> = {},
): { values: Record<string, HyperValue>; errors: Record<string, string> } {
  const values: Record<string, HyperValue> = {};
  const errors: Record<string, string> = {};
  for (const [name, fallback] of defaults) {
    const field = hyperField(name);
    const raw = form.get(field);
    const kind = kinds[name] ?? hyperKind(fallback);
    if (kind === "boolean") values[name] = raw === "on";
    else if (kind === "number" || kind === "integer") {
      const text = String(raw ?? "").trim();
      const number = Number(text);
      if (!text) values[name] = fallback;
      else if (!Number.isFinite(number)) errors[field] = `${name} must be a number.`;
      else if (kind === "integer" && !Number.isInteger(number)) errors[field] = `${name} must be a whole number.`;
      else values[name] = number;
    } else values[name] = String(raw ?? "");
  }
  return { values, errors };
}

/** A FieldError's path as the training form names its controls: "hyperparameters.NAME", or the input's field
 * ("datasets", "seed", "recipe", "includeBaseData"). */
export function trainingFieldKey(path: readonly string[]): string {
  const parts = path[0] === "input" ? path.slice(1) : [...path];
  if (parts[0] === "hyperparameters" && parts[1]) return hyperField(parts[1]);
  return parts[0] ?? "";
}

/** The same answer with each FieldError's path replaced by its form key, for problemOf. */
export function withFormKeys<R extends object>(result: R): R {
  const errors = (result as { fieldErrors?: readonly { field: readonly string[]; message: string }[] }).fieldErrors;
  if (!errors) return result;
  return { ...result, fieldErrors: errors.map((e) => ({ ...e, field: [trainingFieldKey(e.field)] })) };
}

// ------------------------------------------------------------------ data sets and jobs

export interface DatasetLike {
  name: string;
  split?: DatasetSplit | null;
  perturbation?: string | null;
}

/** The data sets one trains on: no perturbed copies; the rounds' train splits first, then the rest as listed. */
export function trainingChoices<D extends DatasetLike>(datasets: readonly D[]): D[] {
  const usable = datasets.filter((d) => !d.perturbation);
  const train = usable.filter((d) => d.split === "TRAIN").sort((a, b) => a.name.localeCompare(b.name));
  return [...train, ...usable.filter((d) => d.split !== "TRAIN")];
}

/** "round 1", "rounds 1, 3", or "none". */
export function roundsText(rounds: readonly number[]): string {
  if (!rounds.length) return "none";
  return `${rounds.length === 1 ? "round" : "rounds"} ${rounds.join(", ")}`;
}
