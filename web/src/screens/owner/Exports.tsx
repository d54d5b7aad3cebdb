import { useState } from "react";
import { useAuth } from "../../lib/auth";
import { downloadWithToken } from "../../lib/download";
import { submitted } from "../Form";
import type { ManagedTask } from "./Manage";
import { Outcome, Select, useOutcome } from "./parts";

export default function Exports({ task }: { task: ManagedTask }) {
  const { session } = useAuth();
  const outcome = useOutcome();
  const [busy, setBusy] = useState(false);
  const rounds = [...task.rounds].sort((a, b) => b.number - a.number);

  async function download(form: FormData) {
    const round = String(form.get("round") ?? "");
    const format = String(form.get("format") ?? "jsonl");
    const params = new URLSearchParams({ format });
    if (round) params.set("round", round);
    const fallback = `${task.code}${round ? `-r${round}` : ""}.${format === "hf" ? "zip" : "jsonl"}`;
    setBusy(true);
    const problem = await downloadWithToken(
      `/export/${encodeURIComponent(task.code)}?${params}`,
      session?.token ?? null,
      fallback,
    );
    setBusy(false);
    if (problem) outcome.fail(problem);
    else outcome.succeed(`Downloaded ${fallback}.`);
  }

  return (
    <section aria-labelledby="exports-title">
      <h2 id="exports-title">Exports</h2>
      <p className="lead">
        Every example of a round but the retracted ones, as JSON Lines (one example a line, readable by the jsonl
        importer) or a zipped Hugging Face <code>datasets</code> folder. Authors are pseudonyms.
      </p>
      <form className="card owner-form" onSubmit={submitted(download)}>
        <Select label="Round" id="export-round" name="round" defaultValue={rounds[0]?.number ?? ""}>
          {rounds.map((r) => (
            <option key={r.id} value={r.number}>
              Round {r.number}
            </option>
          ))}
          <option value="">Every round</option>
        </Select>
        <Select label="Format" id="export-format" name="format" defaultValue="jsonl">
          <option value="jsonl">JSON Lines (.jsonl)</option>
          <option value="hf">Hugging Face datasets folder (.zip)</option>
        </Select>
        <button type="submit" disabled={busy}>
          {busy ? "Downloading…" : "Download export"}
        </button>
        <Outcome outcome={outcome} />
      </form>
    </section>
  );
}
