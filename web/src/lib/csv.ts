// The leaderboard's CSV, written in the browser in exactly the server's format (services/leaderboard.py to_csv:
// Python's csv module, numbers as Python's repr writes them), so that the file downloaded from a re-weighted board
// is the one the server would give for the same weights.

/** A number as Python's repr(float) writes it: the shortest digits that read back the same, "1.0" not "1",
 * exponent form below 1e-4 and from 1e16 ("1e-05", "1e+16"). */
export function pyFloat(n: number): string {
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  if (n === 0) return Object.is(n, -0) ? "-0.0" : "0.0";
  const [mantissa = "", exponent = "0"] = n.toExponential().split("e");
  const exp = Number(exponent);
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  const whole = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
  return `${sign}${whole}.${digits.slice(exp + 1) || "0"}`;
}

const FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r"];

/** A text cell as spreadsheets show it without running it (CSV injection): a formula gets a leading '. */
export function safeCell(text: string): string {
  return FORMULA_STARTS.some((start) => text.startsWith(start)) ? `'${text}` : text;
}

/** One CSV field as Python's csv module writes it (QUOTE_MINIMAL). */
function field(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows of cells as CSV text, "\n" after each line. */
export function toCsv(rows: readonly (readonly string[])[]): string {
  return rows.map((row) => `${row.map(field).join(",")}\n`).join("");
}

/** CSV text as rows of cells (quoted fields, doubled quotes and line breaks inside quotes understood). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

export interface CsvRow {
  rank: number | null;
  modelId: string;
  model: string;
  submitter: string;
  dynascore: number | null;
  values: Record<string, number | null>;
  missing: readonly string[];
  gaps: readonly { dataset: string; reason: string }[];
}

/** The board as the server's CSV: rank, model_id (the API's Model id), model, submitter, dynascore, every metric,
 * missing, gaps. */
export function boardCsv(metrics: readonly string[], rows: readonly CsvRow[]): string {
  const number = (n: number | null | undefined) => (n == null ? "" : pyFloat(n));
  return toCsv([
    ["rank", "model_id", "model", "submitter", "dynascore", ...(rows.length ? metrics : []), "missing", "gaps"],
    ...rows.map((r) => [
      r.rank == null ? "" : String(r.rank),
      r.modelId,
      safeCell(r.model),
      safeCell(r.submitter),
      number(r.dynascore),
      ...metrics.map((m) => number(r.values[m])),
      safeCell(r.missing.join(" ")),
      safeCell(r.gaps.map((g) => `${g.dataset}: ${g.reason}`).join("; ")),
    ]),
  ]);
}
