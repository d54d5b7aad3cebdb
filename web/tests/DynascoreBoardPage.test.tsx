import { cleanup, render, screen, waitFor } from "@testing-library/react";
import { Client, fetchExchange, subscriptionExchange } from "@urql/core";
import { Provider } from "urql";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Router } from "wouter";
import { memoryLocation } from "wouter/memory-location";
import { DynascoreBoard } from "../src/screens/DynascoreBoard";

const FORK_ID = "TGVhZGVyYm9hcmRGb3JrOjE";

const board = {
  __typename: "Task",
  id: "VGFzazox",
  updatesCursor: "cursor-1",
  leaderboard: {
    __typename: "Leaderboard",
    taskCode: "sentiment",
    principalMetric: "accuracy",
    memoryBudgetGb: 16,
    datasets: ["round-1-test"],
    datasetWeights: [{ __typename: "Weight", name: "round-1-test", weight: 1 }],
    metrics: [
      {
        __typename: "LeaderboardMetric",
        name: "accuracy",
        description: "Right answers",
        direction: "HIGHER",
        unit: null,
      },
      { __typename: "LeaderboardMetric", name: "throughput", description: "Speed", direction: "HIGHER", unit: "ex/s" },
    ],
    rows: ["first", "second"].map((name, i) => ({
      __typename: "LeaderboardRow",
      key: `TW9kZWw6${i}`,
      model: { __typename: "LeaderboardModel", modelId: `TW9kZWw6${i}`, name, submitter: null },
      metrics: [],
      datasets: [
        {
          __typename: "LeaderboardDatasetValues",
          dataset: "round-1-test",
          values: [
            { __typename: "MetricValue", name: "accuracy", value: 0.8 - i / 10 },
            { __typename: "MetricValue", name: "throughput", value: 100 + i * 50 },
          ],
        },
      ],
      gaps: [],
    })),
  },
};

const fork = {
  __typename: "LeaderboardFork",
  id: FORK_ID,
  name: "heavy",
  description: "",
  metricWeights: [
    { __typename: "Weight", name: "accuracy", weight: 0 },
    { __typename: "Weight", name: "throughput", weight: 6.5 },
  ],
  datasetWeights: [],
};

/** A server whose fork answers at once and whose board answers `boardDelayMs` later. */
function client(boardDelayMs: number) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async (_url: string, init: RequestInit) => {
      const { operationName } = JSON.parse(String(init.body)) as { operationName: string };
      if (operationName === "BoardBase") await new Promise((r) => setTimeout(r, boardDelayMs));
      const data = operationName === "BoardBase" ? { task: board } : { node: fork };
      return new Response(JSON.stringify({ data }), { headers: { "content-type": "application/json" } });
    }),
  );
  return new Client({
    url: "http://test/graphql",
    exchanges: [
      fetchExchange,
      subscriptionExchange({ forwardSubscription: () => ({ subscribe: () => ({ unsubscribe: () => {} }) }) }),
    ],
    preferGetMethod: false,
  });
}

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("the Dynascore board opened from a fork's link", () => {
  // The board read after the fork once put the fork's weights back to the defaults in the same render.
  it.each([0, 50])("shows the fork's weights when the board answers %i ms after the fork", async (delay) => {
    const { hook, searchHook } = memoryLocation({ path: `/tasks/sentiment/board?fork=${FORK_ID}` });
    render(
      <Provider value={client(delay)}>
        <Router hook={hook} searchHook={searchHook}>
          <DynascoreBoard code="sentiment" />
        </Router>
      </Provider>,
    );
    const throughput = await screen.findByRole<HTMLInputElement>("slider", { name: "throughput" });
    await waitFor(() => expect(screen.getByText("Weights of the fork “heavy”", { exact: false })).toBeTruthy());
    // Left a moment for any later effect to move them.
    await new Promise((r) => setTimeout(r, 50));
    expect(throughput.value).toBe("6.5");
    expect(screen.getByRole<HTMLInputElement>("slider", { name: "accuracy" }).value).toBe("0");
  });
});
