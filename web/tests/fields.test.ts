import { describe, expect, it } from "vitest";
import {
  buildFields,
  choicesOf,
  codePointOffset,
  type FieldDescriptor,
  fieldTitle,
  formFields,
  showValue,
  spanFromSelection,
  spanOfText,
} from "../src/lib/fields";

const field = (over: Partial<FieldDescriptor>): FieldDescriptor => ({
  name: "f",
  role: "INPUT",
  type: "TEXT",
  description: "",
  required: true,
  ...over,
});

describe("field titles", () => {
  it("puts names in words", () => {
    expect(fieldTitle("statement")).toBe("Statement");
    expect(fieldTitle("target_group")).toBe("Target group");
    expect(fieldTitle("timeTaken")).toBe("Time taken");
  });
});

describe("choices and form fields", () => {
  it("offers a field's own choices, else the task's labels", () => {
    expect(choicesOf(field({ type: "CHOICE", choices: ["a", "b"] }), ["x"])).toEqual(["a", "b"]);
    expect(choicesOf(field({ type: "CHOICE", choices: null }), ["x", "y"])).toEqual(["x", "y"]);
  });
  it("leaves the context out of the form", () => {
    const fields = [field({ name: "passage", role: "CONTEXT" }), field({ name: "question" })];
    expect(formFields(fields).map((f) => f.name)).toEqual(["question"]);
  });
});

describe("spans", () => {
  const context = "The canal opened in 1788 and closed in 1952.";
  it("trims a selection and gives its offset", () => {
    expect(spanFromSelection(context, 19, 25)).toEqual({ text: "1788", start: 20 });
    expect(spanFromSelection(context, 25, 19)).toEqual({ text: "1788", start: 20 });
    expect(spanFromSelection(context, 3, 4)).toBeNull();
  });
  it("counts offsets in characters, as the server does, not UTF-16 units", () => {
    const text = "🙂 smile then frown";
    expect(codePointOffset(text, text.indexOf("smile"))).toBe(2);
    expect(spanFromSelection(text, text.indexOf("smile"), text.indexOf("smile") + 5)).toEqual({
      text: "smile",
      start: 2,
    });
  });
  it("finds typed text in the context", () => {
    expect(spanOfText(context, " 1952 ")).toEqual({ text: "1952", start: 39 });
    expect(spanOfText(context, "1999")).toBeNull();
  });
});

describe("building an example's fields", () => {
  const fields: FieldDescriptor[] = [
    field({ name: "passage", role: "CONTEXT" }),
    field({ name: "question", minLength: 5, maxLength: 20 }),
    field({ name: "label", role: "TARGET", type: "CHOICE", choices: null }),
    field({ name: "score", role: "METADATA", type: "NUMBER", integer: true, minimum: 0, maximum: 10, required: false }),
    field({ name: "sure", role: "METADATA", type: "BOOLEAN", required: false }),
    field({ name: "answer", role: "TARGET", type: "SPAN", contextField: "passage", maxLength: 10 }),
    field({ name: "extra", role: "METADATA", type: "OTHER", required: false }),
  ];

  it("converts every kind of value", () => {
    const built = buildFields(
      fields,
      {
        question: "  Which year?  ",
        label: "yes",
        score: "7",
        sure: true,
        answer: { text: "1788", start: 20 },
        extra: '{"a": 1}',
      },
      ["yes", "no"],
    );
    expect(built.errors).toEqual({});
    expect(built.fields).toEqual({
      question: "Which year?",
      label: "yes",
      score: 7,
      sure: true,
      answer: { text: "1788", start: 20 },
      extra: { a: 1 },
    });
  });

  it("says what is wrong with each field", () => {
    const built = buildFields(
      fields,
      { question: "Why", label: "maybe", score: "7.5", answer: "typed but not found", extra: "{" },
      ["yes", "no"],
    );
    expect(built.errors).toEqual({
      question: "Question needs at least 5 characters.",
      label: "Choose one of: yes, no.",
      score: "Score must be a whole number.",
      answer: "Select the answer in the passage.",
      extra: "Extra must be JSON (see the field's description).",
    });
    expect(buildFields(fields, {}, []).errors).toMatchObject({
      question: "Question is required.",
      label: "Label is required.",
    });
    expect(buildFields(fields, { score: "11" }, []).errors.score).toBe("Score must be at most 10.");
    expect(buildFields(fields, { score: "abc" }, []).errors.score).toBe("Score must be a number.");
  });

  it("leaves optional empty fields out", () => {
    const built = buildFields(fields, { question: "Which year?", label: "no", answer: { text: "a", start: 0 } }, [
      "yes",
      "no",
    ]);
    expect(Object.keys(built.fields).sort()).toEqual(["answer", "label", "question"]);
  });
});

describe("references", () => {
  const refs: FieldDescriptor[] = [
    {
      name: "translation",
      role: "TARGET",
      type: "REFERENCES",
      description: "",
      required: true,
      minLength: 2,
      maxLength: 40,
      maxReferences: 2,
    },
  ];

  it("takes one reference per line: a list when there are several", () => {
    expect(buildFields(refs, { translation: " The dog is white. \n\n" }).fields).toEqual({
      translation: "The dog is white.",
    });
    expect(buildFields(refs, { translation: "The dog is white.\nThe dog's white." }).fields).toEqual({
      translation: ["The dog is white.", "The dog's white."],
    });
  });

  it("names what is wrong with them", () => {
    expect(buildFields(refs, { translation: "a\nb\nc" }).errors.translation).toBe(
      "Translation takes at most 2 references, one per line.",
    );
    expect(buildFields(refs, { translation: "Same\nSame" }).errors.translation).toBe(
      "Translation lists a reference twice.",
    );
    expect(buildFields(refs, { translation: "Fine\nx" }).errors.translation).toBe(
      "Each reference needs at least 2 characters.",
    );
  });
});

describe("showing values", () => {
  it("shows text, spans and anything else", () => {
    expect(showValue("x")).toBe("x");
    expect(showValue({ text: "span", start: 3 })).toBe("span");
    expect(showValue({ a: 1 })).toBe('{"a":1}');
    expect(showValue(["one", "two"])).toBe("one\ntwo");
    expect(showValue(null)).toBe("");
  });
});
