import { describe, expect, it } from "vitest";
import { boardCsv, parseCsv, pyFloat, safeCell } from "../src/lib/csv";
import { niceTicks } from "../src/lib/ticks";

describe("pyFloat writes numbers as Python's repr", () => {
  it.each([
    [1, "1.0"],
    [0, "0.0"],
    [-0, "-0.0"],
    [0.1 + 0.2, "0.30000000000000004"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [1.5e-7, "1.5e-07"],
    [123456789012345.6, "123456789012345.6"],
    [1e15, "1000000000000000.0"],
    [1e16, "1e+16"],
    [2.5e22, "2.5e+22"],
    [-3.25, "-3.25"],
    [16 - 1.25, "14.75"],
    [1 / 3, "0.3333333333333333"],
  ])("%s -> %s", (n, repr) => expect(pyFloat(n)).toBe(repr));
});

describe("the board's CSV", () => {
  it("is written as the server writes it", () => {
    const csv = boardCsv(
      ["accuracy", "memory"],
      [
        {
          rank: 1,
          modelId: "12",
          model: "=HYPERLINK(1)",
          submitter: "ada",
          dynascore: 0.5,
          values: { accuracy: 1, memory: null },
          missing: ["memory"],
          gaps: [{ dataset: "r1-test", reason: "QUEUED" }],
        },
        {
          rank: null,
          modelId: "3",
          model: 'a "quoted", name',
          submitter: "",
          dynascore: null,
          values: { accuracy: 0.25, memory: 2 },
          missing: [],
          gaps: [],
        },
      ],
    );
    expect(csv).toBe(
      "rank,model_id,model,submitter,dynascore,accuracy,memory,missing,gaps\n" +
        "1,12,'=HYPERLINK(1),ada,0.5,1.0,,memory,r1-test: QUEUED\n" +
        ',3,"a ""quoted"", name",,,0.25,2.0,,\n',
    );
    expect(parseCsv(csv)[2]).toEqual(["", "3", 'a "quoted", name', "", "", "0.25", "2.0", "", ""]);
  });

  it("has no metric columns without rows, like the server's", () => {
    expect(boardCsv(["accuracy"], [])).toBe("rank,model_id,model,submitter,dynascore,missing,gaps\n");
  });

  it("neutralises formulas", () => {
    expect(safeCell("-1")).toBe("'-1");
    expect(safeCell("plain")).toBe("plain");
  });
});

describe("niceTicks", () => {
  it("covers the range with round steps", () => {
    expect(niceTicks(0, 0.83)).toEqual({ ticks: [0, 0.2, 0.4, 0.6, 0.8, 1], domain: [0, 1] });
    expect(niceTicks(-1.2, 3.1).ticks).toEqual([-2, -1, 0, 1, 2, 3, 4]);
    expect(niceTicks(0, 0).ticks.length).toBeGreaterThan(1);
  });
});
