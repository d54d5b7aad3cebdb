import { CombinedError } from "@urql/core";
import { describe, expect, it } from "vitest";
import { problemOf } from "../src/lib/errors";

describe("the problem in a mutation's answer", () => {
  it("is nothing when the success member came back", () => {
    expect(problemOf(undefined, { __typename: "AuthPayload" }, "AuthPayload")).toBeNull();
    expect(
      problemOf(undefined, { __typename: "PredictionPending" }, ["ExampleCreated", "PredictionPending"]),
    ).toBeNull();
  });

  it("places field errors beside the fields the form knows, the rest in the message", () => {
    const problem = problemOf(
      undefined,
      {
        __typename: "InvalidInput",
        message: "The example breaks the task's rules.",
        fieldErrors: [
          { field: ["fields", "statement"], message: "At least 3 characters." },
          { field: ["timeTakenMs"], message: "Too long." },
        ],
      },
      "ExampleCreated",
      ["statement", "label"],
    );
    expect(problem).toEqual({
      message: "The example breaks the task's rules. Too long.",
      fields: { statement: "At least 3 characters." },
    });
  });

  it("says when to try again after a rate limit", () => {
    const problem = problemOf(
      undefined,
      { __typename: "RateLimited", message: "Too many examples.", retryAfterSeconds: 12.3 },
      "ExampleCreated",
    );
    expect(problem?.message).toBe("Too many examples. (try again in 13 s)");
  });

  it("says when a used-up allowance frees up, and nothing when only removing something frees it", () => {
    const daily = problemOf(
      undefined,
      { __typename: "QuotaExceeded", message: "You reached the cap.", resetsInSeconds: 5 * 3600 + 10 },
      "ExampleCreated",
    );
    expect(daily?.message).toBe("You reached the cap. (the allowance frees up in 5 h)");
    const soon = problemOf(undefined, { __typename: "QuotaExceeded", message: "Cap.", resetsInSeconds: 61 }, "X");
    expect(soon?.message).toBe("Cap. (the allowance frees up in 2 min)");
    const webhooks = problemOf(
      undefined,
      { __typename: "QuotaExceeded", message: "Delete one.", resetsInSeconds: null },
      "X",
    );
    expect(webhooks?.message).toBe("Delete one.");
  });

  it("turns transport failures into words", () => {
    const network = new CombinedError({ networkError: new Error("Failed to fetch") });
    expect(problemOf(network, null, "X")?.message).toMatch(/could not be reached/);
    const graphql = new CombinedError({ graphQLErrors: [{ message: "Unexpected error; it has been logged." }] });
    expect(problemOf(graphql, null, "X")?.message).toBe("Unexpected error; it has been logged.");
  });
});
