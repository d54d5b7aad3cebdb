import { describe, expect, it } from "vitest";
import { annotatorsCsv, fillGaps, MAX_DRAWN, periodsCsv } from "../src/lib/analytics";
import { parseCsv } from "../src/lib/csv";

const hour = (h: number, collected: number) => ({
  start: new Date(Date.UTC(2026, 0, 5, h)).toISOString(),
  end: new Date(Date.UTC(2026, 0, 5, h + 1)).toISOString(),
  collected,
  fooled: 0,
  verifiedFooled: 0,
});

describe("round analytics in the browser", () => {
  it("fills the empty periods between the first and the last with zeros", () => {
    const filled = fillGaps([hour(10, 3), hour(13, 1)]);
    expect(filled.map((p) => [new Date(p.start).getUTCHours(), p.collected])).toEqual([
      [10, 3],
      [11, 0],
      [12, 0],
      [13, 1],
    ]);
    expect(fillGaps([])).toEqual([]);
  });

  it("leaves a span too long to draw as it is", () => {
    const far = { ...hour(10, 1), start: new Date(Date.UTC(2026, 2, 5, 10)).toISOString() };
    far.end = new Date(Date.parse(far.start) + 3_600_000).toISOString();
    expect(fillGaps([hour(10, 2), far])).toHaveLength(2);
    expect(MAX_DRAWN).toBe(336);
  });

  it("writes the periods and the annotators as CSV, guarding formulas", () => {
    expect(parseCsv(periodsCsv([hour(10, 3)]))).toEqual([
      ["start", "end", "collected", "fooled", "verified_fooled"],
      ["2026-01-05T10:00:00.000Z", "2026-01-05T11:00:00.000Z", "3", "0", "0"],
    ]);
    const rows = parseCsv(
      annotatorsCsv([
        {
          user: { username: "=cmd" },
          stats: { collected: 4, fooled: 2, verifiedFooled: 1, vmer: 0.25 },
          medianTimeTakenMs: 1500,
          validations: 3,
          validationAgreement: null,
        },
      ]),
    );
    expect(rows[0]?.[0]).toBe("username");
    expect(rows[1]).toEqual(["'=cmd", "4", "2", "1", "0.25", "1500", "3", ""]);
  });
});
