import { describe, expect, it } from "vitest";
import { alphaInWords, belowBar, seconds } from "../src/lib/validators";

const v = (username: string, agreement: number | null, decidedVotes: number, weight = 1) => ({
  user: { username },
  agreement,
  decidedVotes,
  weight,
});

describe("validator quality in words", () => {
  it("reads alpha by the usual thresholds, and says why there is none", () => {
    expect(alphaInWords(0.91, 12)).toBe("Krippendorff's α 0.91 (reliable) over 12 examples");
    expect(alphaInWords(0.7, 1)).toBe("Krippendorff's α 0.70 (tentative) over 1 example");
    expect(alphaInWords(0.3, 4)).toContain("(low)");
    expect(alphaInWords(-0.5, 2)).toContain("(no better than chance)");
    expect(alphaInWords(null, 0)).toBe("no example has two crowd votes yet");
    expect(alphaInWords(null, 3)).toContain("same label");
  });

  it("finds the validators below a bar, never those without enough decided votes or already excluded", () => {
    const all = [v("low", 0.2, 10), v("few", 0.1, 2), v("fine", 0.9, 10), v("gone", 0.1, 10, 0), v("none", null, 0)];
    expect(belowBar(all, 0.6, 5).map((x) => x.user.username)).toEqual(["low"]);
    expect(belowBar(all, 0.6, 1).map((x) => x.user.username)).toEqual(["low", "few"]);
    expect(belowBar(all, 0.95, 5).map((x) => x.user.username)).toEqual(["low", "fine"]);
  });

  it("shows times in seconds or minutes", () => {
    expect(seconds(1234)).toBe("1.2 s");
    expect(seconds(125_000)).toBe("2 min 5 s");
    expect(seconds(null)).toBe("–");
  });
});
