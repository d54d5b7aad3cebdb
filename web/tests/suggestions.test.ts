import { describe, expect, it } from "vitest";
import type { FieldDescriptor } from "../src/lib/fields";
import {
  type DiffPart,
  diffWords,
  draftReady,
  formatMove,
  orderMoves,
  probability,
  sourceTitle,
  sourceWords,
  speakMove,
  tokens,
  valuesFromFields,
} from "../src/lib/suggestions";

/** The two texts a diff was made from: each must come back exactly. */
function sides(parts: DiffPart[]): [string, string] {
  const before = parts.filter((p) => p.kind !== "added").map((p) => p.text);
  const after = parts.filter((p) => p.kind !== "removed").map((p) => p.text);
  return [before.join(""), after.join("")];
}

describe("word diffs of a draft and a suggestion", () => {
  it("splits text into words, spaces and punctuation", () => {
    expect(tokens("I don't  like it, really.")).toEqual([
      "I",
      " ",
      "don't",
      "  ",
      "like",
      " ",
      "it",
      ",",
      " ",
      "really",
      ".",
    ]);
    expect(tokens("")).toEqual([]);
    expect(tokens("café naïve")).toEqual(["café", " ", "naïve"]);
  });

  it("marks a typo as one word removed and one added", () => {
    expect(diffWords("I love this movie.", "I olve this movie.")).toEqual([
      { kind: "same", text: "I " },
      { kind: "removed", text: "love" },
      { kind: "added", text: "olve" },
      { kind: "same", text: " this movie." },
    ]);
  });

  it("marks an added clause as added, keeping the words around it", () => {
    const parts = diffWords("I love this movie.", "I love this movie, but overall I would not recommend it.");
    expect(parts[0]).toEqual({ kind: "same", text: "I love this movie" });
    expect(parts.filter((p) => p.kind === "removed")).toEqual([]);
    expect(parts.some((p) => p.kind === "added" && p.text.includes("would not recommend"))).toBe(true);
    expect(sides(parts)).toEqual(["I love this movie.", "I love this movie, but overall I would not recommend it."]);
  });

  it("marks a prefix added before the draft", () => {
    expect(diffWords("I love this movie.", "It got off to a rough start, but I love this movie.")).toEqual([
      { kind: "added", text: "It got off to a rough start, but " },
      { kind: "same", text: "I love this movie." },
    ]);
  });

  it("joins neighbouring changed words across a lone space", () => {
    expect(diffWords("a good film", "a fine movie")).toEqual([
      { kind: "same", text: "a " },
      { kind: "removed", text: "good film" },
      { kind: "added", text: "fine movie" },
    ]);
  });

  it("sees casing and spacing changes", () => {
    expect(diffWords("I love it", "I LOVE it")).toEqual([
      { kind: "same", text: "I " },
      { kind: "removed", text: "love" },
      { kind: "added", text: "LOVE" },
      { kind: "same", text: " it" },
    ]);
    expect(sides(diffWords("I love it", "I  love it"))).toEqual(["I love it", "I  love it"]);
  });

  it("handles equal, empty and wholly different texts", () => {
    expect(diffWords("same", "same")).toEqual([{ kind: "same", text: "same" }]);
    expect(diffWords("", "")).toEqual([]);
    expect(diffWords("", "new")).toEqual([{ kind: "added", text: "new" }]);
    expect(diffWords("old", "")).toEqual([{ kind: "removed", text: "old" }]);
    expect(diffWords("positive", "negative")).toEqual([
      { kind: "removed", text: "positive" },
      { kind: "added", text: "negative" },
    ]);
  });

  it("gives both texts back for any edit, long ones included", () => {
    const long = Array.from({ length: 700 }, (_, i) => `w${i}`).join(" ");
    const cases: [string, string][] = [
      ["The plot is thin, the acting fine.", "The plot is thin; the acting is fine!"],
      ["Hello world", "world Hello"],
      [long, long.replace("w5 ", "x5 ").replace("w600", "y600")],
      [long, long.split(" ").reverse().join(" ")],
    ];
    for (const [before, after] of cases) expect(sides(diffWords(before, after))).toEqual([before, after]);
  });
});

describe("probability moves", () => {
  const moves = [
    { label: "positive", before: 0.9137, after: 0.3249 },
    { label: "negative", before: 0.01, after: 0.1 },
    { label: "neutral", before: 0.0763, after: 0.5751 },
  ];

  it("are written with two decimals and an arrow", () => {
    expect(probability(0.905)).toBe("0.91");
    expect(probability(1)).toBe("1.00");
    expect(formatMove(must(moves[0]))).toBe("positive 0.91 → 0.32");
    expect(speakMove(must(moves[0]))).toBe("positive from 0.91 to 0.32");
  });

  it("put the gold first, then the predicted label, then the largest move", () => {
    expect(orderMoves(moves, "positive", "neutral").map((m) => m.label)).toEqual(["positive", "neutral", "negative"]);
    expect(orderMoves(moves, "negative", "positive").map((m) => m.label)).toEqual(["negative", "positive", "neutral"]);
    expect(orderMoves(moves, null, null).map((m) => m.label)).toEqual(["positive", "neutral", "negative"]);
    expect(must(moves[0]).label).toBe("positive"); // the input is not reordered
  });
});

/** The value, which the test expects to be there. */
function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("missing");
  return value;
}

const field = (over: Partial<FieldDescriptor>): FieldDescriptor => ({
  name: "f",
  role: "INPUT",
  type: "TEXT",
  description: "",
  required: true,
  ...over,
});

const sentiment = [
  field({ name: "prompt", role: "CONTEXT", required: false }),
  field({ name: "statement" }),
  field({ name: "label", role: "TARGET", type: "CHOICE" }),
  field({ name: "explanation", role: "METADATA", required: false }),
];

describe("a suggestion put in the form", () => {
  it("fills the fields the form shows, each as its control holds it", () => {
    const fields = [
      ...sentiment,
      field({ name: "answer", role: "TARGET", type: "SPAN", contextField: "passage" }),
      field({ name: "rating", role: "METADATA", type: "NUMBER", required: false }),
      field({ name: "sure", role: "METADATA", type: "BOOLEAN", required: false }),
      field({ name: "extra", role: "METADATA", type: "OTHER", required: false }),
    ];
    expect(
      valuesFromFields(fields, {
        prompt: "ignored: context",
        statement: "I olve this movie.",
        label: "positive",
        answer: { text: "23 locks", start: 19 },
        rating: 4,
        sure: true,
        extra: { a: 1 },
        unknown: "ignored",
      }),
    ).toEqual({
      statement: "I olve this movie.",
      label: "positive",
      answer: { text: "23 locks", start: 19 },
      rating: "4",
      sure: true,
      extra: '{"a":1}',
    });
  });

  it("leaves out the fields the suggestion does not carry", () => {
    expect(valuesFromFields(sentiment, { statement: "x y z", label: "negative" })).toEqual({
      statement: "x y z",
      label: "negative",
    });
  });
});

describe("a draft ready for suggestions", () => {
  it("needs the inputs and the gold, not the optional metadata", () => {
    expect(draftReady(sentiment, {})).toBe(false);
    expect(draftReady(sentiment, { statement: "I love it." })).toBe(false);
    expect(draftReady(sentiment, { label: "positive" })).toBe(false);
    expect(draftReady(sentiment, { statement: "   ", label: "positive" })).toBe(false);
    expect(draftReady(sentiment, { statement: "I love it.", label: "positive" })).toBe(true);
  });

  it("takes a span as a filled gold", () => {
    const qa = [
      field({ name: "passage", role: "CONTEXT" }),
      field({ name: "question" }),
      field({ name: "answer", role: "TARGET", type: "SPAN", contextField: "passage" }),
    ];
    expect(draftReady(qa, { question: "Where?" })).toBe(false);
    expect(draftReady(qa, { question: "Where?", answer: { text: "here", start: 0 } })).toBe(true);
  });
});

describe("sources in words", () => {
  it("name the adversary that helped", () => {
    expect(sourceWords("HUMAN")).toBe("Human");
    expect(sourceWords("HUMAN", "ignored")).toBe("Human");
    expect(sourceWords("ASSISTED", "perturbation-search")).toBe("Assisted by perturbation-search");
    expect(sourceWords("ASSISTED")).toBe("Assisted");
    expect(sourceWords("MACHINE", "llm")).toBe("Machine (llm)");
    expect(sourceTitle("ASSISTED")).toBe("Assisted");
    expect(sourceTitle("MACHINE")).toBe("Machine");
  });
});
