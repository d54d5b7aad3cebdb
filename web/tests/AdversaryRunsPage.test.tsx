import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { Client, fetchExchange, subscriptionExchange } from "@urql/core";
import { Provider } from "urql";
import { afterEach, describe, expect, it, vi } from "vitest";
import Adversaries from "../src/screens/owner/Adversaries";
import type { ManagedTask } from "../src/screens/owner/Manage";

const adversary = (name: string, generates: boolean, available: boolean, reason: string | null = null) => ({
  __typename: "Adversary",
  name,
  description: `${name} writes things.`,
  needsDraft: name === "perturbation-search",
  assists: true,
  generates,
  available,
  unavailableReason: reason,
});

const ADVERSARIES = [
  adversary("perturbation-search", true, true),
  adversary("llm", true, false, "off: set DYNAFORGE_LLM_ADVERSARY_URL"),
  adversary("helper-only", false, true),
  adversary("sentiment-templates", true, true),
];

const run = (status: string, extra: Record<string, unknown> = {}) => ({
  __typename: "AdversaryRun",
  id: "QWR2ZXJzYXJ5UnVuOjE",
  adversary: "sentiment-templates",
  roundNumber: 1,
  status,
  budget: 20,
  seed: 1,
  queries: status === "QUEUED" ? 0 : status === "RUNNING" ? 8 : 20,
  itemsTotal: status === "QUEUED" ? 0 : 8,
  itemsDone: status === "RUNNING" ? 1 : status === "DONE" ? 3 : 0,
  candidates: status === "DONE" ? 6 : status === "RUNNING" ? 2 : 0,
  error: null,
  createdAt: "2026-11-26T14:55:48.105Z",
  startedAt: status === "QUEUED" ? null : "2026-11-26T14:55:48.119Z",
  finishedAt: status === "DONE" || status === "CANCELLED" ? "2026-11-26T14:55:48.508Z" : null,
  ...extra,
});

const task = {
  id: "VGFzazox",
  code: "sentiment",
  name: "Sentiment",
  active: true,
  currentRound: { id: "Um91bmQ6MQ", number: 1, endedAt: null },
} as unknown as ManagedTask;

interface Sent {
  operationName: string;
  variables: Record<string, unknown>;
}

/** A client whose server answers by operation name: `runs` is called for each adversaryRuns request. */
function clientAnswering(answers: {
  runs: (n: number) => unknown[];
  generate?: (variables: Record<string, unknown>) => unknown;
  cancel?: (variables: Record<string, unknown>) => unknown;
}) {
  const sent: Sent[] = [];
  let runCalls = 0;
  const fetch = vi.fn(async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as Sent;
    sent.push(body);
    const input = (body.variables.input ?? {}) as Record<string, unknown>;
    const data =
      body.operationName === "OwnerAdversaries"
        ? { task: { __typename: "Task", id: task.id, adversaries: ADVERSARIES } }
        : body.operationName === "AdversaryRuns"
          ? {
              task: {
                __typename: "Task",
                id: task.id,
                updatesCursor: `cursor-${runCalls + 1}`,
                adversaryRuns: ((nodes) => ({ __typename: "AdversaryRunConnection", totalCount: nodes.length, nodes }))(
                  answers.runs(runCalls++),
                ),
              },
            }
          : body.operationName === "GenerateCandidates"
            ? { generateCandidates: answers.generate?.(input) }
            : { cancelGeneration: answers.cancel?.(input) };
    return new Response(JSON.stringify({ data }), { headers: { "content-type": "application/json" } });
  });
  vi.stubGlobal("fetch", fetch);
  // The server's side of adversaryRunUpdated: `push` sends an event to every open subscription.
  const open = new Set<{ next: (result: { data: Record<string, unknown> }) => void }>();
  const subscribed: Record<string, unknown>[] = [];
  const client = new Client({
    url: "http://test/graphql",
    exchanges: [
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe(sink) {
            subscribed.push(request.variables ?? {});
            open.add(sink);
            return { unsubscribe: () => open.delete(sink) };
          },
        }),
      }),
    ],
    preferGetMethod: false,
  });
  const push = (run: unknown) => {
    for (const sink of open) sink.next({ data: { adversaryRunUpdated: { cursor: "later", run } } });
  };
  return { client, sent, runCalls: () => runCalls, push, subscribed, open: () => open.size };
}

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const renderPage = (client: Client) =>
  render(
    <Provider value={client}>
      <Adversaries task={task} />
    </Provider>,
  );

describe("the machine adversaries page", () => {
  it("offers the adversaries that generate, the unavailable ones disabled with their reason", async () => {
    const { client } = clientAnswering({ runs: () => [] });
    renderPage(client);
    const select = await screen.findByLabelText("Adversary");
    await waitFor(() => expect(within(select).getAllByRole("option")).toHaveLength(3));
    const options = within(select).getAllByRole<HTMLOptionElement>("option");
    expect(options.map((o) => [o.textContent, o.disabled])).toEqual([
      ["perturbation-search", false],
      ["sentiment-templates", false],
      ["llm (unavailable: off: set DYNAFORGE_LLM_ADVERSARY_URL)", true],
    ]);
    expect(screen.getByText(/perturbation-search writes things\. It edits the round's examples/)).toBeTruthy();
    fireEvent.change(select, { target: { value: "sentiment-templates" } });
    expect(screen.getByText(/sentiment-templates writes things\. It writes from the round's contexts/)).toBeTruthy();
    expect((screen.getByLabelText(/^Budget/) as HTMLInputElement).value).toBe("50");
    expect(await screen.findByText("No run yet.")).toBeTruthy();
  });

  it("shows the server's field error beside the budget, and a refusal in words", async () => {
    const { client, sent } = clientAnswering({
      runs: () => [],
      generate: (input) =>
        input.budget === 0
          ? {
              __typename: "InvalidInput",
              message: "Invalid input: budget: must be a whole number of target queries, at least 1",
              fieldErrors: [{ __typename: "FieldError", field: ["budget"], message: "must be at least 1" }],
            }
          : { __typename: "QuotaExceeded", message: "sentiment spent its 5000 target queries", resetsInSeconds: 49934 },
    });
    renderPage(client);
    await screen.findByRole("option", { name: "sentiment-templates" });
    const budget = screen.getByLabelText(/^Budget/) as HTMLInputElement;
    fireEvent.change(budget, { target: { value: "0" } });
    fireEvent.change(screen.getByLabelText(/^Seed/), { target: { value: "1" } });
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Start run" })));
    await waitFor(() => expect(budget.getAttribute("aria-invalid")).toBe("true"));
    const error = document.getElementById("gen-budget-error");
    expect(error?.textContent).toBe("must be at least 1");
    expect(budget.getAttribute("aria-describedby")).toContain("gen-budget-error");
    expect(screen.getAllByRole("alert").map((a) => a.textContent)).toContain(
      "The run did not start: fix the fields marked above.",
    );
    const input = sent.find((s) => s.operationName === "GenerateCandidates")?.variables.input;
    expect(input).toEqual({ taskCode: "sentiment", adversary: "perturbation-search", budget: 0, seed: 1 });

    fireEvent.change(budget, { target: { value: "20" } });
    fireEvent.change(screen.getByLabelText(/^Seed/), { target: { value: "" } });
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Start run" })));
    await waitFor(() =>
      expect(screen.getAllByRole("alert").map((a) => a.textContent)).toContain(
        "sentiment spent its 5000 target queries (try again in 13 h 52 min).",
      ),
    );
    expect(budget.getAttribute("aria-invalid")).toBeNull();
    expect(sent.filter((s) => s.operationName === "GenerateCandidates").at(-1)?.variables.input).toMatchObject({
      seed: null,
    });
  });

  it("a whole number is checked before sending", async () => {
    const { client, sent } = clientAnswering({ runs: () => [] });
    renderPage(client);
    await screen.findByRole("option", { name: "sentiment-templates" });
    fireEvent.change(screen.getByLabelText(/^Budget/), { target: { value: "2.5" } });
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Start run" })));
    expect(await screen.findByText("The budget must be a whole number.")).toBeTruthy();
    expect(sent.some((s) => s.operationName === "GenerateCandidates")).toBe(false);
  });

  it("follows a run live from the list's cursor, announces when it ends, and never polls", async () => {
    const { client, runCalls, push, subscribed, open } = clientAnswering({ runs: () => [run("RUNNING")] });
    renderPage(client);
    const table = await screen.findByRole("table", { name: "Generation runs of Sentiment, newest first" });
    expect(within(table).getByText("Running")).toBeTruthy();
    expect(within(table).getByText("8 of 20 target queries")).toBeTruthy();
    expect(within(table).getByRole("button", { name: "Cancel the run of sentiment-templates (seed 1)" })).toBeTruthy();
    await waitFor(() => expect(open()).toBe(1));
    expect(subscribed.at(-1)).toMatchObject({ code: "sentiment", after: "cursor-1" });
    await act(async () => push(run("RUNNING", { queries: 12 })));
    expect(await within(table).findByText("12 of 20 target queries")).toBeTruthy();
    await act(async () => push(run("DONE")));
    await waitFor(() => expect(within(table).getByText("Done")).toBeTruthy());
    const news = await screen.findByText(
      "The run of sentiment-templates (seed 1) is done: 6 candidates for the validation queue.",
    );
    expect(news.getAttribute("role")).toBe("status");
    expect(within(table).queryByRole("button")).toBeNull();
    await new Promise((r) => setTimeout(r, 1500));
    expect(runCalls()).toBe(1);
  });

  it("reloads the list when a run it lacks starts", async () => {
    let calls = 0;
    const other = run("QUEUED", { id: "QWR2ZXJzYXJ5UnVuOjI", seed: 2 });
    const { client, push, open } = clientAnswering({
      runs: () => (calls++ === 0 ? [run("DONE")] : [other, run("DONE")]),
    });
    renderPage(client);
    const table = await screen.findByRole("table", { name: "Generation runs of Sentiment, newest first" });
    await waitFor(() => expect(open()).toBe(1));
    await act(async () => push(other));
    expect(await within(table).findByText("Queued")).toBeTruthy();
    expect(calls).toBe(2);
  });

  it("cancels a running run", async () => {
    let cancelled = false;
    const { client, sent } = clientAnswering({
      runs: () => [run(cancelled ? "CANCELLED" : "RUNNING")],
      cancel: () => {
        cancelled = true;
        return { __typename: "GenerationCancelled", run: run("CANCELLED") };
      },
    });
    renderPage(client);
    const button = await screen.findByRole("button", { name: /^Cancel the run of/ });
    await act(async () => fireEvent.click(button));
    expect(sent.find((s) => s.operationName === "CancelGeneration")?.variables).toEqual({
      input: { id: "QWR2ZXJzYXJ5UnVuOjE" },
    });
    expect(await screen.findByText("Cancelled")).toBeTruthy();
    expect(
      await screen.findByText("Cancelled the run of sentiment-templates (seed 1) before it stored a candidate."),
    ).toBeTruthy();
  });
});
