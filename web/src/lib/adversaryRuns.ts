// Generation runs (Mutation.generateCandidates) as the owner page shows them: their status in words, their progress
// as numbers and a sentence, what changed between two states of the list (for a live
// region), and the form's numbers read before they are sent.

export type RunStatus = "QUEUED" | "RUNNING" | "DONE" | "FAILED" | "CANCELLED";

export const runStatusWords: Record<RunStatus, string> = {
  QUEUED: "Queued",
  RUNNING: "Running",
  DONE: "Done",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};

/** Whether a run may still move (and be cancelled). */
export const isRunActive = (status: RunStatus): boolean => status === "QUEUED" || status === "RUNNING";

/** `done` of `total` as a share from 0 to 1 (clamped); null when there is no total yet. */
export function share(done: number, total: number): number | null {
  if (!Number.isFinite(done) || !Number.isFinite(total) || total <= 0) return null;
  return Math.min(1, Math.max(0, done / total));
}

/** A share as a whole percentage ("38%"); a dash without one. */
export function percentText(value: number | null): string {
  return value == null ? "–" : `${Math.round(value * 100)}%`;
}

export interface RunProgress {
  status: RunStatus;
  budget: number;
  queries: number;
  itemsTotal: number;
  itemsDone: number;
}

/** "12 of 20 target queries": what the run spent of its budget. */
export function queriesText(run: Pick<RunProgress, "queries" | "budget">): string {
  return `${run.queries} of ${run.budget} target ${run.budget === 1 ? "query" : "queries"}`;
}

/** "3 of 8 items attacked", or what a queued run has not counted yet. */
export function itemsText(run: Pick<RunProgress, "status" | "itemsDone" | "itemsTotal">): string {
  if (run.itemsTotal <= 0) return run.status === "QUEUED" ? "items counted when it starts" : "nothing to attack";
  return `${run.itemsDone} of ${run.itemsTotal} ${run.itemsTotal === 1 ? "item" : "items"} attacked`;
}

/** How long a run took or has taken: "0.4 s", "12 s", "3 min 5 s", "1 h 2 min"; empty before it starts. */
export function duration(start: string | null | undefined, end: string | null | undefined, now = Date.now()): string {
  if (!start) return "";
  const from = Date.parse(start);
  const to = end ? Date.parse(end) : now;
  if (Number.isNaN(from) || Number.isNaN(to)) return "";
  return spanText(Math.max(0, (to - from) / 1000));
}

/** Seconds for people: "0.4 s", "12 s", "3 min 5 s", "13 h 52 min". */
export function spanText(seconds: number): string {
  if (seconds < 10) return `${Math.round(seconds * 10) / 10} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const whole = Math.round(seconds);
  if (whole < 3600) {
    const s = whole % 60;
    return `${Math.floor(whole / 60)} min${s ? ` ${s} s` : ""}`;
  }
  const minutes = Math.round(whole / 60);
  const m = minutes % 60;
  return `${Math.floor(minutes / 60)} h${m ? ` ${m} min` : ""}`;
}

export interface RunLike {
  id: string;
  adversary: string;
  seed: number;
  status: RunStatus;
  candidates: number;
  error?: string | null;
}

/** A run named for people: "sentiment-templates (seed 1)". */
export const runName = (run: Pick<RunLike, "adversary" | "seed">): string => `${run.adversary} (seed ${run.seed})`;

/** What one status means for the run, in a sentence a screen reader can announce. */
export function statusSentence(run: RunLike): string {
  const name = runName(run);
  const found = `${run.candidates} ${run.candidates === 1 ? "candidate" : "candidates"}`;
  switch (run.status) {
    case "QUEUED":
      return `The run of ${name} is queued.`;
    case "RUNNING":
      return `The run of ${name} is running.`;
    case "DONE":
      return `The run of ${name} is done: ${found} for the validation queue${run.error ? ` (${run.error})` : ""}.`;
    case "FAILED":
      return `The run of ${name} failed${run.error ? `: ${run.error}` : ""}.`;
    case "CANCELLED":
      return `The run of ${name} was cancelled: ${found} kept.`;
  }
}

/** The sentences to announce between two polls: a run seen before whose status changed, and a new run. The first
 * list seen (`before` null) announces nothing. */
export function statusChanges(before: ReadonlyMap<string, RunStatus> | null, runs: readonly RunLike[]): string[] {
  if (!before) return [];
  return runs.filter((run) => before.get(run.id) !== run.status).map(statusSentence);
}

/** The statuses of a list, by run id, for the next call of statusChanges. */
export function statusesOf(runs: readonly RunLike[]): Map<string, RunStatus> {
  return new Map(runs.map((run) => [run.id, run.status]));
}

const INT_MAX = 2 ** 31 - 1;

/** A whole number typed in the form: the number, null when left empty, or the sentence that says what is wrong.
 * Ranges are the server's to judge (it names the rule); this only keeps what GraphQL's Int cannot carry away. */
export function wholeNumber(text: string, what: string): { value: number | null } | { error: string } {
  const trimmed = text.trim();
  if (!trimmed) return { value: null };
  if (!/^[+-]?\d+$/.test(trimmed)) return { error: `The ${what} must be a whole number.` };
  const value = Number(trimmed);
  if (Math.abs(value) > INT_MAX) return { error: `The ${what} must be at most ${INT_MAX}.` };
  return { value };
}

/** An adversary as the form's select needs it. */
export interface AdversaryChoice {
  name: string;
  description: string;
  needsDraft: boolean;
  generates: boolean;
  available: boolean;
  unavailableReason?: string | null;
}

/** The adversaries that generate: those that can run here first, then those that cannot (listed disabled with
 * why), each group in the server's order. Adversaries that only assist are left out. */
export function generators<A extends AdversaryChoice>(adversaries: readonly A[]): { usable: A[]; unusable: A[] } {
  const generating = adversaries.filter((a) => a.generates);
  return { usable: generating.filter((a) => a.available), unusable: generating.filter((a) => !a.available) };
}

/** What an adversary attacks, in a sentence. */
export function attacksWhat(adversary: Pick<AdversaryChoice, "needsDraft">): string {
  return adversary.needsDraft
    ? "It edits the round's examples the target got right, so it needs some."
    : "It writes from the round's contexts alone, and also edits the examples the target got right.";
}
