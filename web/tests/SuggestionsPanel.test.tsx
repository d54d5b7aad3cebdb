import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { Client, fetchExchange } from "@urql/core";
import { useState } from "react";
import { Provider } from "urql";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { FieldDescriptor, FormValues } from "../src/lib/fields";
import { type SuggestionItem, Suggestions } from "../src/screens/Suggestions";

/** The value, which the test expects to be there. */
function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("missing");
  return value;
}

const fields: FieldDescriptor[] = [
  { name: "prompt", role: "CONTEXT", type: "TEXT", description: "", required: false },
  { name: "statement", role: "INPUT", type: "TEXT", description: "", required: true, minLength: 3 },
  { name: "label", role: "TARGET", type: "CHOICE", description: "", required: true },
];
const labels = ["positive", "negative", "neutral"];

const ADVERSARIES = [
  { __typename: "Adversary", name: "perturbation-search", description: "Typos.", assists: true, available: true },
  { __typename: "Adversary", name: "sentiment-templates", description: "Negation.", assists: true, available: true },
  { __typename: "Adversary", name: "llm", description: "Off.", assists: true, available: false },
];

const prediction = (label: string) => ({ __typename: "Prediction", label, span: null, fields: { label } });

const TYPO = {
  __typename: "Suggestion",
  id: "U3VnZ2VzdGlvbjox",
  adversary: "perturbation-search",
  fields: { statement: "I olve this movie.", label: "positive" },
  draft: { statement: "I love this movie.", label: "positive" },
  edits: ["statement: 'love' -> 'olve' (typo)"],
  rationale: "A typo keeps the meaning.",
  createdAt: "2026-01-01T00:00:00Z",
  verdict: { __typename: "TargetVerdict", fooled: true, goldProbability: 0.17, prediction: prediction("negative") },
  moves: [
    { __typename: "ProbabilityMove", label: "negative", before: 0.01, after: 0.48 },
    { __typename: "ProbabilityMove", label: "positive", before: 0.88, after: 0.17 },
    { __typename: "ProbabilityMove", label: "neutral", before: 0.11, after: 0.35 },
  ],
};

const CONTRAST = {
  ...TYPO,
  id: "U3VnZ2VzdGlvbjoy",
  adversary: "sentiment-templates",
  fields: { statement: "I love this movie, but I would not recommend it.", label: "negative" },
  rationale: "contrast",
  verdict: { ...TYPO.verdict, goldProbability: 0.13, prediction: prediction("positive") },
};

function found(suggestions: unknown[], fooled = false) {
  return {
    __typename: "EditsSuggested",
    adversaries: ["perturbation-search", "sentiment-templates"],
    queries: 16,
    draft: {
      __typename: "TargetVerdict",
      fooled,
      goldProbability: fooled ? 0.01 : 0.88,
      prediction: prediction("positive"),
    },
    suggestions,
  };
}

/** A client whose server answers each operation by name; `suggest` answers suggestEdits and sees its variables. */
function clientAnswering(suggest: (variables: Record<string, unknown>) => unknown) {
  const fetch = vi.fn(async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as { operationName: string; variables: Record<string, unknown> };
    const data =
      body.operationName === "SuggestAdversaries"
        ? { task: { __typename: "Task", id: "VGFzazox", adversaries: ADVERSARIES } }
        : { suggestEdits: suggest(body.variables) };
    return new Response(JSON.stringify({ data }), { headers: { "content-type": "application/json" } });
  });
  vi.stubGlobal("fetch", fetch);
  return new Client({ url: "http://test/graphql", exchanges: [fetchExchange], preferGetMethod: false });
}

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function Harness({
  client,
  initial,
  onUse = () => {},
  onErrors = () => {},
}: {
  client: Client;
  initial: FormValues;
  onUse?: (s: SuggestionItem) => void;
  onErrors?: (e: Record<string, string>) => void;
}) {
  const [values] = useState(initial);
  return (
    <Provider value={client}>
      <Suggestions
        code="sentiment"
        fields={fields}
        labels={labels}
        values={values}
        contextId="Q29udGV4dDox"
        chosenId={null}
        onUse={onUse}
        onErrors={onErrors}
      />
    </Provider>
  );
}

async function ask() {
  const button = await screen.findByRole("button", { name: "Suggest edits" });
  await act(async () => fireEvent.click(button));
}

describe("suggestions beside the form", () => {
  it("waits for the input and the gold, and offers the available adversaries", async () => {
    const client = clientAnswering(() => found([]));
    render(<Harness client={client} initial={{ statement: "I love this movie." }} />);
    expect((await screen.findByRole<HTMLButtonElement>("button", { name: "Suggest edits" })).disabled).toBe(true);
    expect(screen.getByText("Fill in Statement and Label first.")).toBeTruthy();
    const select = await screen.findByLabelText("Adversary");
    expect(
      within(select)
        .getAllByRole("option")
        .map((o) => o.textContent),
    ).toEqual(["All available (2)", "perturbation-search", "sentiment-templates"]);
  });

  it("sends the draft and context, lists the suggestions with their moves, and uses one", async () => {
    let sent: Record<string, unknown> = {};
    const client = clientAnswering((variables) => {
      sent = variables;
      return found([TYPO, CONTRAST]);
    });
    const onUse = vi.fn();
    render(
      <Harness client={client} initial={{ statement: " I love this movie. ", label: "positive" }} onUse={onUse} />,
    );
    await ask();
    expect(sent).toEqual({
      input: {
        taskCode: "sentiment",
        draft: { statement: "I love this movie.", label: "positive" },
        contextId: "Q29udGV4dDox",
        adversary: null,
        limit: 3,
      },
    });
    const list = await screen.findByRole("list", { name: "Suggested edits" });
    const items = within(list)
      .getAllByRole("listitem")
      .filter((li) => li.parentElement === list);
    expect(items).toHaveLength(2);
    const first = must(items[0]);
    expect(first.querySelector("del")?.textContent).toBe("love");
    expect(first.querySelector("ins")?.textContent).toBe("olve");
    expect(first.textContent).toContain("The model predicts negative");
    // The gold's move first, then the predicted label's.
    const moves = within(first).getByRole("list", { name: /How the probabilities moved/ });
    expect(
      within(moves)
        .getAllByRole("listitem")
        .map((li) => li.textContent),
    ).toEqual(["positive 0.88 → 0.17", "negative 0.01 → 0.48", "neutral 0.11 → 0.35"]);
    expect(first.textContent).toContain("perturbation-search");
    expect(first.textContent).toContain("A typo keeps the meaning.");
    // A changed gold is shown with the input.
    expect(must(items[1]).textContent).toContain("Label");
    expect(must(items[1]).querySelector(".role-target ins")?.textContent).toBe("negative");
    expect(screen.getByText(/2 suggestions from perturbation-search, sentiment-templates/)).toBeTruthy();
    fireEvent.click(within(first).getByRole("button", { name: /Use this/ }));
    expect(onUse).toHaveBeenCalledWith(expect.objectContaining({ id: TYPO.id, fields: TYPO.fields }));
  });

  it("says when the draft already fools the model", async () => {
    const client = clientAnswering(() => found([], true));
    render(<Harness client={client} initial={{ statement: "I love this movie.", label: "negative" }} />);
    await ask();
    expect(await screen.findByText(/Your draft already fools the model/)).toBeTruthy();
    expect(screen.queryByRole("list", { name: "Suggested edits" })).toBeNull();
  });

  it("says when nothing was found within the budget", async () => {
    const client = clientAnswering(() => found([]));
    render(<Harness client={client} initial={{ statement: "I love this movie.", label: "positive" }} />);
    await ask();
    expect(await screen.findByText(/No edit found within the budget/)).toBeTruthy();
  });

  it("shows a rate limit's message with when to try again", async () => {
    const limited = clientAnswering(() => ({
      __typename: "RateLimited",
      message: "You asked for 60 suggestions this hour.",
      retryAfterSeconds: 120,
    }));
    render(<Harness client={limited} initial={{ statement: "I love this movie.", label: "positive" }} />);
    await ask();
    expect((await screen.findByRole("alert")).textContent).toBe(
      "You asked for 60 suggestions this hour. (try again in 120 s)",
    );
  });

  it("sends the server's field errors to the form", async () => {
    const onErrors = vi.fn();
    const invalid = clientAnswering(() => ({
      __typename: "InvalidInput",
      message: "Invalid input: statement: must have at least 3 characters",
      fieldErrors: [{ __typename: "FieldError", field: ["draft", "statement"], message: "must have 3 characters" }],
    }));
    render(<Harness client={invalid} initial={{ statement: "I love it.", label: "positive" }} onErrors={onErrors} />);
    await ask();
    await screen.findByText(/Invalid input/);
    expect(onErrors).toHaveBeenLastCalledWith({ statement: "must have 3 characters" });
  });

  it("checks the draft before asking", async () => {
    const suggest = vi.fn(() => found([]));
    const onErrors = vi.fn();
    render(
      <Harness
        client={clientAnswering(suggest)}
        initial={{ statement: "ok", label: "positive" }}
        onErrors={onErrors}
      />,
    );
    await ask();
    expect(onErrors).toHaveBeenLastCalledWith({ statement: "Statement needs at least 3 characters." });
    expect(suggest).not.toHaveBeenCalled();
  });
});
