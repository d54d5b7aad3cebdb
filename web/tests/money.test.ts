import { describe, expect, it } from "vitest";
import { bonusRows, money } from "../src/lib/money";

describe("money", () => {
  it("shows minor units in the currency", () => {
    expect(money(75, "GBP")).toBe("£0.75");
    expect(money(1250, "USD")).toBe("US$12.50");
    expect(money(5, "XX1")).toBe("0.05 XX1");
  });

  it("reads a bonus file back into minor units", () => {
    expect(bonusRows("aaaa,0.50\nbbbb,0.10\n")).toEqual([
      { participant: "aaaa", amount: 50 },
      { participant: "bbbb", amount: 10 },
    ]);
    // 0.29 * 100 is 28.999...: rounded, never truncated
    expect(bonusRows("cccc,0.29")).toEqual([{ participant: "cccc", amount: 29 }]);
    expect(bonusRows("")).toEqual([]);
  });
});
