// Machine adversaries' suggestions (Mutation.suggestEdits) shown beside the annotation form: what changed from the
// draft, word by word; how the target's probabilities moved; and the suggestion's fields put back into the form.
import { type FieldDescriptor, type FormValues, formFields } from "./fields";

/** A run of text in a diff: the same in both, only in the draft (removed), or only in the suggestion (added). */
export interface DiffPart {
  kind: "same" | "added" | "removed";
  text: string;
}

/** Words (letters, digits, apostrophes), runs of spaces, and single other characters: what a diff compares. */
export function tokens(text: string): string[] {
  return text.match(/[\p{L}\p{N}\p{M}'’]+|\s+|[^\p{L}\p{N}\p{M}'’\s]/gu) ?? [];
}

/** Above this many token pairs, the diff says "all of it changed" instead of searching (texts are short). */
const MAX_CELLS = 400_000;

/** A word-level diff of `before` (the draft) and `after` (the suggestion): the longest common run of tokens kept,
 * the rest removed or added, removals before additions where both happen at one place; neighbours of a kind merged. */
export function diffWords(before: string, after: string): DiffPart[] {
  if (before === after) return before ? [{ kind: "same", text: before }] : [];
  const a = tokens(before);
  const b = tokens(after);
  // Shared head and tail first: edits are small, so the table is usually tiny.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const parts: DiffPart[] = [];
  const push = (kind: DiffPart["kind"], text: string) => {
    if (!text) return;
    const last = parts[parts.length - 1];
    if (last && last.kind === kind) last.text += text;
    else parts.push({ kind, text });
  };
  push("same", a.slice(0, head).join(""));
  if (midA.length * midB.length > MAX_CELLS) {
    push("removed", midA.join(""));
    push("added", midB.join(""));
  } else {
    // at(i, j): the longest common subsequence of midA[i..] and midB[j..], in a flat table.
    const n = midA.length;
    const m = midB.length;
    const lcs = new Int32Array((n + 1) * (m + 1));
    const at = (i: number, j: number) => lcs[i * (m + 1) + j] ?? 0;
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i * (m + 1) + j] = midA[i] === midB[j] ? at(i + 1, j + 1) + 1 : Math.max(at(i + 1, j), at(i, j + 1));
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        push("same", midA[i] ?? "");
        i++;
        j++;
      } else if (j >= m || (i < n && at(i + 1, j) >= at(i, j + 1))) push("removed", midA[i++] ?? "");
      else push("added", midB[j++] ?? "");
    }
  }
  push("same", a.slice(a.length - tail).join(""));
  return regroup(parts);
}

/** Each change as one removal then one addition; a run of spaces alone between two changes joins them ("a b" ->
 * "c d" is one change, not two with an unchanged space between). */
function regroup(parts: DiffPart[]): DiffPart[] {
  const out: DiffPart[] = [];
  let removed = "";
  let added = "";
  const flush = () => {
    if (removed) out.push({ kind: "removed", text: removed });
    if (added) out.push({ kind: "added", text: added });
    removed = "";
    added = "";
  };
  parts.forEach((part, k) => {
    const between =
      part.kind === "same" &&
      /^\s+$/.test(part.text) &&
      (parts[k - 1]?.kind ?? "same") !== "same" &&
      (parts[k + 1]?.kind ?? "same") !== "same";
    if (between) {
      removed += part.text;
      added += part.text;
    } else if (part.kind === "removed") removed += part.text;
    else if (part.kind === "added") added += part.text;
    else {
      flush();
      const last = out[out.length - 1];
      if (last?.kind === "same") last.text += part.text;
      else out.push({ ...part });
    }
  });
  flush();
  return out;
}

/** A probability as the target gives it, two decimals ("0.91"). */
export function probability(p: number): string {
  return p.toFixed(2);
}

export interface Move {
  label: string;
  before: number;
  after: number;
}

/** How one label's probability moved: "positive 0.91 → 0.32". */
export function formatMove(move: Move): string {
  return `${move.label} ${probability(move.before)} → ${probability(move.after)}`;
}

/** The same, for a screen reader: "positive from 0.91 to 0.32". */
export function speakMove(move: Move): string {
  return `${move.label} from ${probability(move.before)} to ${probability(move.after)}`;
}

/** The moves worth reading first: the gold the suggestion claims, then the label the target now predicts, then the
 * others by how far they moved. */
export function orderMoves<M extends Move>(
  moves: readonly M[],
  gold: string | null | undefined,
  predicted: string | null | undefined,
): M[] {
  const rank = (m: M) => (m.label === gold ? 0 : m.label === predicted ? 1 : 2);
  return [...moves].sort((x, y) => rank(x) - rank(y) || Math.abs(y.after - y.before) - Math.abs(x.after - x.before));
}

/** The form's values for an example's fields (a suggestion's): only the fields the form shows, each as its control
 * holds it (numbers as text, spans as spans, a plugin's own kinds as JSON). */
export function valuesFromFields(fields: readonly FieldDescriptor[], example: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const field of formFields(fields)) {
    if (!(field.name in example)) continue;
    const value = example[field.name];
    if (value == null) values[field.name] = undefined;
    else if (field.type === "BOOLEAN") values[field.name] = value === true || value === "true";
    else if (field.type === "SPAN" && typeof value === "object" && "text" in value && "start" in value)
      values[field.name] = { text: String(value.text), start: Number(value.start) };
    else if (field.type === "OTHER" || (typeof value === "object" && field.type !== "SPAN"))
      values[field.name] = JSON.stringify(value);
    else values[field.name] = String(typeof value === "object" && "text" in value ? value.text : value);
  }
  return values;
}

function filled(value: FormValues[string]): boolean {
  return value !== undefined && !(typeof value === "string" && value.trim() === "");
}

/** Whether the draft can be sent for suggestions: every required input and gold (target) field has a value, and
 * at least one input does. */
export function draftReady(fields: readonly FieldDescriptor[], values: FormValues): boolean {
  const shown = formFields(fields);
  const inputs = shown.filter((f) => f.role === "INPUT");
  const needed = shown.filter((f) => (f.role === "INPUT" || f.role === "TARGET") && f.required);
  return inputs.some((f) => filled(values[f.name])) && needed.every((f) => filled(values[f.name]));
}

export type Source = "HUMAN" | "ASSISTED" | "MACHINE";

/** Where an example came from, in words: "Human", "Assisted by perturbation-search", "Machine (llm)". */
export function sourceWords(source: Source, adversary?: string | null): string {
  if (source === "ASSISTED") return adversary ? `Assisted by ${adversary}` : "Assisted";
  if (source === "MACHINE") return adversary ? `Machine (${adversary})` : "Machine";
  return "Human";
}

/** The name of a source in a table: "Human", "Assisted", "Machine". */
export function sourceTitle(source: Source): string {
  return source.charAt(0) + source.slice(1).toLowerCase();
}
