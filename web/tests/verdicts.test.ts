import { describe, expect, it } from "vitest";
import { choiceTitles, titleOf } from "../src/lib/fields";
import { explainVerdict } from "../src/lib/verdicts";

describe("explainVerdict", () => {
  it("says the score, the threshold and what followed", () => {
    const f1 = { measure: "word-overlap F1 of the model's answer with yours", threshold: 0.4, fooledBelow: true };
    expect(explainVerdict({ ...f1, score: 0.25 })).toBe(
      "Word-overlap F1 of the model's answer with yours: 0.25, below the threshold of 0.40: the model is fooled.",
    );
    expect(explainVerdict({ ...f1, score: 0.4 })).toBe(
      "Word-overlap F1 of the model's answer with yours: 0.40, at the threshold of 0.40: the model is not fooled.",
    );
    expect(explainVerdict({ measure: "chrF", score: 61.234, threshold: 50, fooledBelow: true })).toBe(
      "ChrF: 61.2, above the threshold of 50.0: the model is not fooled.",
    );
    expect(explainVerdict({ measure: "toxicity", score: 0.9, threshold: 0.5, fooledBelow: false })).toBe(
      "Toxicity: 0.90, above the threshold of 0.50: the model is fooled.",
    );
  });
});

describe("label titles", () => {
  it("maps each choice value to its title, the value where there is none", () => {
    const fields = [
      { name: "label", choices: ["hateful", "not_hateful"], choiceTitles: ["hateful", "not hateful"] },
      { name: "group", choices: ["a"], choiceTitles: null },
    ];
    const titles = choiceTitles(fields as never);
    expect(titles).toEqual({ hateful: "hateful", not_hateful: "not hateful" });
    expect(titleOf(titles, "not_hateful")).toBe("not hateful");
    expect(titleOf(titles, "a")).toBe("a");
  });
});
