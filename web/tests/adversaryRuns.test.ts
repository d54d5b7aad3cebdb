import { describe, expect, it } from "vitest";
import {
  attacksWhat,
  duration,
  generators,
  isRunActive,
  itemsText,
  percentText,
  queriesText,
  type RunLike,
  type RunStatus,
  runName,
  share,
  spanText,
  statusChanges,
  statusesOf,
  statusSentence,
  wholeNumber,
} from "../src/lib/adversaryRuns";

const run = (id: string, status: RunStatus, extra: Partial<RunLike> = {}): RunLike => ({
  id,
  adversary: "sentiment-templates",
  seed: 1,
  status,
  candidates: 0,
  ...extra,
});

describe("the runs' states", () => {
  it("knows which runs may still move", () => {
    expect(["QUEUED", "RUNNING", "DONE", "FAILED", "CANCELLED"].filter((s) => isRunActive(s as RunStatus))).toEqual([
      "QUEUED",
      "RUNNING",
    ]);
  });
});

describe("progress", () => {
  it("is a share clamped to 0..1, none without a total", () => {
    expect(share(3, 8)).toBe(0.375);
    expect(share(25, 20)).toBe(1);
    expect(share(-1, 20)).toBe(0);
    expect(share(0, 0)).toBeNull();
    expect(share(1, Number.NaN)).toBeNull();
  });

  it("reads as a whole percentage", () => {
    expect(percentText(0.375)).toBe("38%");
    expect(percentText(1)).toBe("100%");
    expect(percentText(null)).toBe("–");
  });

  it("says what was spent of the budget", () => {
    expect(queriesText({ queries: 12, budget: 20 })).toBe("12 of 20 target queries");
    expect(queriesText({ queries: 1, budget: 1 })).toBe("1 of 1 target query");
  });

  it("says what was attacked, or that nothing is counted yet", () => {
    expect(itemsText({ status: "RUNNING", itemsDone: 3, itemsTotal: 8 })).toBe("3 of 8 items attacked");
    expect(itemsText({ status: "DONE", itemsDone: 1, itemsTotal: 1 })).toBe("1 of 1 item attacked");
    expect(itemsText({ status: "QUEUED", itemsDone: 0, itemsTotal: 0 })).toBe("items counted when it starts");
    expect(itemsText({ status: "DONE", itemsDone: 0, itemsTotal: 0 })).toBe("nothing to attack");
  });
});

describe("times", () => {
  it("reads spans of seconds, minutes and hours", () => {
    expect(spanText(0.388)).toBe("0.4 s");
    expect(spanText(12.4)).toBe("12 s");
    expect(spanText(60)).toBe("1 min");
    expect(spanText(185)).toBe("3 min 5 s");
    expect(spanText(49_934.2)).toBe("13 h 52 min");
    expect(spanText(7200)).toBe("2 h");
  });

  it("measures a run from its start to its end, or to now while it runs", () => {
    const start = "2026-11-26T14:55:48.119605+00:00";
    expect(duration(start, "2026-11-26T14:55:48.508016+00:00")).toBe("0.4 s");
    expect(duration(start, null, Date.parse("2026-11-26T14:57:48.119Z"))).toBe("2 min");
    expect(duration(null, null)).toBe("");
    expect(duration("not a date", null)).toBe("");
  });
});

describe("status changes for the live region", () => {
  it("announces nothing for the first list, then each run whose status changed and each new run", () => {
    const first = [run("a", "RUNNING"), run("b", "DONE", { candidates: 2 })];
    expect(statusChanges(null, first)).toEqual([]);
    const before = statusesOf(first);
    const next = [
      run("c", "QUEUED", { seed: 7 }),
      run("a", "DONE", { candidates: 6 }),
      run("b", "DONE", { candidates: 2 }),
    ];
    expect(statusChanges(before, next)).toEqual([
      "The run of sentiment-templates (seed 7) is queued.",
      "The run of sentiment-templates (seed 1) is done: 6 candidates for the validation queue.",
    ]);
    expect(statusChanges(statusesOf(next), next)).toEqual([]);
  });

  it("says why a run failed, what a cancelled one kept, and why a done one found nothing", () => {
    expect(statusSentence(run("a", "FAILED", { error: "the model is down" }))).toBe(
      "The run of sentiment-templates (seed 1) failed: the model is down.",
    );
    expect(statusSentence(run("a", "CANCELLED", { candidates: 1 }))).toBe(
      "The run of sentiment-templates (seed 1) was cancelled: 1 candidate kept.",
    );
    expect(statusSentence(run("a", "DONE", { error: "no drafts the target got right" }))).toBe(
      "The run of sentiment-templates (seed 1) is done: 0 candidates for the validation queue (no drafts the target got right).",
    );
    expect(runName({ adversary: "llm", seed: 0 })).toBe("llm (seed 0)");
  });
});

describe("the form", () => {
  it("reads whole numbers, leaves ranges to the server, and keeps what GraphQL's Int cannot carry", () => {
    expect(wholeNumber(" 50 ", "budget")).toEqual({ value: 50 });
    expect(wholeNumber("0", "budget")).toEqual({ value: 0 });
    expect(wholeNumber("-3", "seed")).toEqual({ value: -3 });
    expect(wholeNumber("", "seed")).toEqual({ value: null });
    expect(wholeNumber("2.5", "budget")).toEqual({ error: "The budget must be a whole number." });
    expect(wholeNumber("1e3", "budget")).toEqual({ error: "The budget must be a whole number." });
    expect(wholeNumber("99999999999", "seed")).toEqual({ error: "The seed must be at most 2147483647." });
  });

  it("offers the adversaries that generate, those that cannot run here apart", () => {
    const a = (name: string, generates: boolean, available: boolean) => ({
      name,
      description: "",
      needsDraft: false,
      generates,
      available,
      unavailableReason: available ? null : "off",
    });
    const { usable, unusable } = generators([
      a("perturbation-search", true, true),
      a("llm", true, false),
      a("helper-only", false, true),
      a("sentiment-templates", true, true),
    ]);
    expect(usable.map((x) => x.name)).toEqual(["perturbation-search", "sentiment-templates"]);
    expect(unusable.map((x) => x.name)).toEqual(["llm"]);
    expect(attacksWhat({ needsDraft: true })).toMatch(/examples the target got right/);
  });
});
