// The browser's Dynascore against the server's: web/scripts/dynascore-fixture.py ran the server's own
// dynaforge.evaluation.dynascore on these models and weights and wrote every figure as Python's repr; the figures
// computed here must be the same doubles (compared through pyFloat, which writes them as repr does).
import { describe, expect, it } from "vitest";
import { pyFloat } from "../src/lib/csv";
import { type Axis, computeBoard, defaultMetricWeights, type ModelScores } from "../src/lib/dynascore";
import fixture from "./dynascore-fixture.json";

const models = fixture.models as ModelScores[];
const axes = fixture.axes as Axis[];
const text = (n: number | null) => (n === null ? null : pyFloat(n));

describe("computeBoard matches the server's Dynascore", () => {
  for (const c of fixture.cases) {
    it(c.name, () => {
      const board = computeBoard(models, axes, {
        principal: "accuracy",
        metricWeights: (c.metricWeights ?? undefined) as Record<string, number> | undefined,
        datasetWeights: c.datasetWeights as [string, number][],
        memoryBudgetGb: 16,
      });
      if (typeof board === "string") throw new Error(board);
      expect(board.rows.map((r) => r.key)).toEqual(c.rows.map((r) => r.key));
      expect(board.rows.map((r) => r.rank)).toEqual(c.rows.map((r) => r.rank));
      expect(board.rows.map((r) => text(r.dynascore))).toEqual(c.rows.map((r) => r.dynascore));
      expect(board.rows.map((r) => r.missing)).toEqual(c.rows.map((r) => r.missing));
      expect(board.rows.map((r) => Object.fromEntries(Object.entries(r.x).map(([k, v]) => [k, text(v)])))).toEqual(
        c.rows.map((r) => r.x),
      );
      expect(Object.fromEntries(Object.entries(board.amrs).map(([k, v]) => [k, pyFloat(v)]))).toEqual(c.amrs);
      expect(board.pairs).toBe(c.pairs);
      expect(board.amrsFallback).toBe(c.fallback);
    });
  }

  it("weighs 0 by default an axis no model has a figure for, as the server's defaults do", () => {
    const unmeasured: Axis[] = [...axes, { name: "fairness", direction: "higher" }];
    const weights = defaultMetricWeights(unmeasured, "accuracy", models);
    expect(weights.fairness).toBe(0);
    expect(weights.accuracy).toBe(4);
    expect(weights.robustness).toBe(1);
    const board = computeBoard(models, unmeasured, {
      principal: "accuracy",
      datasetWeights: [["set-a", 1]],
      memoryBudgetGb: 16,
    });
    if (typeof board === "string") throw new Error(board);
    const without = computeBoard(models, axes, {
      principal: "accuracy",
      datasetWeights: [["set-a", 1]],
      memoryBudgetGb: 16,
    });
    if (typeof without === "string") throw new Error(without);
    // the unmeasured axis changes no rank: every model lacks it, and it weighs nothing
    expect(board.rows.map((r) => [r.key, r.rank])).toEqual(without.rows.map((r) => [r.key, r.rank]));
  });

  it("the terms add up to the Dynascore", () => {
    const board = computeBoard(models, axes, {
      principal: "accuracy",
      datasetWeights: [
        ["set-a", 1],
        ["set-b", 1],
      ],
      memoryBudgetGb: 16,
    });
    if (typeof board === "string") throw new Error(board);
    for (const row of board.rows.filter((r) => r.dynascore !== null))
      expect(Object.values(row.terms).reduce((s, t) => s + t, 0)).toBe(row.dynascore);
  });

  it("says why there is no board when every weight is 0", () => {
    const zero = Object.fromEntries(axes.map((a) => [a.name, 0]));
    expect(
      computeBoard(models, axes, {
        principal: "accuracy",
        metricWeights: zero,
        datasetWeights: [["set-a", 1]],
        memoryBudgetGb: 16,
      }),
    ).toMatch(/metric needs a weight/);
    expect(
      computeBoard(models, axes, { principal: "accuracy", datasetWeights: [["set-a", 0]], memoryBudgetGb: 16 }),
    ).toMatch(/data set needs a weight/);
  });

  it("a lone model falls back to exchange rates of 1", () => {
    const first = models[0] as ModelScores;
    const board = computeBoard([first], axes, {
      principal: "accuracy",
      datasetWeights: [["set-a", 1]],
      memoryBudgetGb: 16,
    });
    if (typeof board === "string") throw new Error(board);
    expect(board.amrsFallback).toBe(true);
    expect(board.rows[0]?.rank).toBe(1);
  });
});
