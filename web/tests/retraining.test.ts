import { describe, expect, it } from "vitest";
import { problemOf } from "../src/lib/errors";
import {
  type DatasetLike,
  estimateText,
  hyperKind,
  hyperparameterEntries,
  kindsOf,
  lineageText,
  parameterEntries,
  readHyperparameters,
  roundsText,
  shortDigest,
  trainedFrom,
  trainingChoices,
  trainingFieldKey,
  withFormKeys,
} from "../src/lib/retraining";

describe("a registered model's lineage", () => {
  const trained = {
    origin: "TRAINED" as const,
    recipe: "words",
    trainingData: {
      datasets: [{ name: "r1-train", size: 24 }],
      examples: 24,
      baseData: false,
    },
    parent: { name: "keyword" },
  };

  it("says where it came from in a sentence", () => {
    expect(lineageText(trained)).toBe("trained on the platform from r1-train (24 examples), parent keyword");
    expect(lineageText({ origin: "SHIPPED", recipe: "default" })).toBe("shipped with the task's plugin");
    expect(lineageText({ origin: "CONFIGURED", parent: null })).toBe("configured (an endpoint or backend settings)");
    expect(lineageText({ origin: "STORE" })).toBe("trained by an operator into the model store");
  });

  it("names every data set and the base data; a model not trained here has no such words", () => {
    const two = {
      datasets: [
        { name: "r1-train", size: 20 },
        { name: "r2-train", size: 10 },
      ],
      examples: 1,
      baseData: true,
    };
    expect(trainedFrom(two)).toBe("from r1-train, r2-train (1 example) and the base data");
    expect(trainedFrom({ datasets: [], examples: 900, baseData: true })).toBe("from the base data (900 examples)");
    expect(trainedFrom(null)).toBe("");
    expect(trainedFrom({ datasets: [], examples: null, baseData: false })).toBe("");
    expect(lineageText({ origin: "TRAINED", trainingData: null })).toBe("trained on the platform");
  });

  it("shortens digests and writes estimates with their intervals", () => {
    expect(shortDigest("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")).toBe("9f86d081884c");
    expect(shortDigest("sha256:9f86d081884c7d65")).toBe("9f86d081884c");
    expect(shortDigest(null)).toBeNull();
    expect(estimateText({ value: 0.8234, low: 0.71, high: 0.9 })).toBe("0.82 [0.71–0.90]");
    expect(estimateText({ value: 0.5, low: null, high: null })).toBe("0.50");
    expect(estimateText({ value: 123.45, low: 100, high: 150 })).toBe("123.5 [100.0–150.0]");
    expect(estimateText(null)).toBe("—");
    expect(roundsText([])).toBe("none");
    expect(roundsText([1])).toBe("round 1");
    expect(roundsText([1, 3])).toBe("rounds 1, 3");
  });
});

describe("a recipe's hyper-parameters", () => {
  const defaults = hyperparameterEntries({ smoothing: 1.0, min_count: 1, lowercase: true, tokenizer: "words" });

  it("types each input by its default", () => {
    expect(defaults.map(([name, value]) => [name, hyperKind(value)])).toEqual([
      ["smoothing", "number"],
      ["min_count", "number"],
      ["lowercase", "boolean"],
      ["tokenizer", "text"],
    ]);
    expect(hyperparameterEntries(null)).toEqual([]);
    expect(hyperparameterEntries({ layers: [1, 2] })).toEqual([["layers", "[1,2]"]]);
  });

  it("reads typed values as the server sends them (the field of each one's type)", () => {
    expect(
      parameterEntries([
        { name: "example_weight", integer: 4 },
        { name: "smoothing", number: 0.5 },
        { name: "lowercase", boolean: false },
        { name: "encoder", string: "lora" },
        { name: "unset" },
      ]),
    ).toEqual([
      ["example_weight", 4],
      ["smoothing", 0.5],
      ["lowercase", false],
      ["encoder", "lora"],
      ["unset", "null"],
    ]);
  });

  it("reads a form: numbers as typed, an empty number as its default, unchecked as false", () => {
    const form = new FormData();
    form.set("hyperparameters.smoothing", "0.5");
    form.set("hyperparameters.min_count", "");
    form.set("hyperparameters.tokenizer", "chars");
    expect(readHyperparameters(form, defaults)).toEqual({
      values: { smoothing: 0.5, min_count: 1, lowercase: false, tokenizer: "chars" },
      errors: {},
    });
    form.set("hyperparameters.smoothing", "a lot");
    form.set("hyperparameters.lowercase", "on");
    const read = readHyperparameters(form, defaults);
    expect(read.errors).toEqual({ "hyperparameters.smoothing": "smoothing must be a number." });
    expect(read.values.lowercase).toBe(true);
  });

  it("holds an INTEGER hyper-parameter to whole numbers, by the recipe's declared types", () => {
    const kinds = kindsOf([
      { name: "smoothing", type: "NUMBER" },
      { name: "min_count", type: "INTEGER" },
      { name: "lowercase", type: "BOOLEAN" },
      { name: "tokenizer", type: "STRING" },
    ]);
    expect(kinds).toEqual({ smoothing: "number", min_count: "integer", lowercase: "boolean", tokenizer: "text" });
    const form = new FormData();
    form.set("hyperparameters.smoothing", "2");
    form.set("hyperparameters.min_count", "2.5");
    const read = readHyperparameters(form, defaults, kinds);
    expect(read.errors).toEqual({ "hyperparameters.min_count": "min_count must be a whole number." });
    expect(read.values.smoothing).toBe(2);
  });

  it("puts the server's field errors beside the form's controls", () => {
    expect(trainingFieldKey(["hyperparameters", "smoothing"])).toBe("hyperparameters.smoothing");
    expect(trainingFieldKey(["input", "seed"])).toBe("seed");
    expect(trainingFieldKey(["datasets"])).toBe("datasets");
    const answer = {
      __typename: "InvalidInput",
      message: "Invalid input: hyperparameters.min_count: must be an integer; datasets: name at least one",
      fieldErrors: [
        { field: ["hyperparameters", "min_count"], message: "must be an integer" },
        { field: ["datasets"], message: "name at least one data set (or include the base data)" },
        { field: ["elsewhere"], message: "something else" },
      ],
    };
    const problem = problemOf(undefined, withFormKeys(answer), "TrainingStarted", [
      "datasets",
      "seed",
      "hyperparameters.min_count",
    ]);
    expect(problem?.fields).toEqual({
      "hyperparameters.min_count": "must be an integer",
      datasets: "name at least one data set (or include the base data)",
    });
    expect(problem?.message).toMatch(/something else$/);
    expect(withFormKeys({ __typename: "TrainingStarted" })).toEqual({ __typename: "TrainingStarted" });
  });
});

describe("data sets and jobs", () => {
  it("offers the train splits first and no perturbed copies", () => {
    const sets: (DatasetLike & { id: string })[] = [
      { id: "1", name: "demo-samples", split: null, perturbation: null },
      { id: "2", name: "r2-train", split: "TRAIN", perturbation: null },
      { id: "3", name: "r1-test", split: "TEST", perturbation: null },
      { id: "4", name: "r1-test~typo", split: "TEST", perturbation: "typo" },
      { id: "5", name: "r1-train", split: "TRAIN", perturbation: null },
    ];
    expect(trainingChoices(sets).map((d) => d.name)).toEqual(["r1-train", "r2-train", "demo-samples", "r1-test"]);
  });
});
