// The Leaderboards and Me screens against the demo: the Dynascore board re-ranks in the browser as its sliders
// move, exactly as the server ranks for the same weights (table and downloaded CSV compared with the server's
// board), a fork saved and loaded, the round leaderboard of annotators, and Me's statistics and token revocation.
import { readFileSync } from "node:fs";
import type { APIRequestContext, Page } from "@playwright/test";
import {
  checkAccessibility,
  expect,
  gql,
  newPerson,
  openTask,
  register,
  screenshots,
  sessionToken,
  test,
  uniqueName,
} from "./fixtures";

const TASK = "sentiment";

interface ServerBoard {
  csv: string;
  datasets: string[];
  metrics: { name: string }[];
  rows: { model: { name: string }; rank: number | null; dynascore: number | null; missing: string[] }[];
}

const BOARD = `query ($code: String!, $m: [WeightInput!], $d: [WeightInput!]) {
  task(code: $code) {
    id
    leaderboard(metricWeights: $m, datasetWeights: $d) {
      csv datasets metrics { name } rows { model { name } rank dynascore missing }
    }
  }
}`;

async function serverBoard(request: APIRequestContext, m?: Record<string, number>, d?: Record<string, number>) {
  const pairs = (w?: Record<string, number>) =>
    w ? Object.entries(w).map(([name, weight]) => ({ name, weight })) : null;
  const data = await gql<{ task: { leaderboard: ServerBoard } }>(request, null, BOARD, {
    code: TASK,
    m: pairs(m),
    d: pairs(d),
  });
  return data.task.leaderboard;
}

const boardTable = (page: Page) => page.locator('table[data-board="models"]');

/** The board as the page shows it: model names, ranks and Dynascores, top to bottom. */
async function shownRows(page: Page) {
  return boardTable(page)
    .locator("tbody tr")
    .evaluateAll((rows) =>
      rows.map((row) => ({
        name: row.querySelector("th")?.textContent ?? "",
        rank: row.querySelector("td")?.textContent ?? "",
        dynascore: row.querySelector("[data-dynascore]")?.textContent ?? "",
      })),
    );
}

function expected(board: ServerBoard) {
  return board.rows.map((r) => ({
    name: r.model.name,
    rank: r.rank === null ? "–" : String(r.rank),
    dynascore: r.dynascore === null ? "–" : r.dynascore.toFixed(3),
  }));
}

async function downloadedCsv(page: Page): Promise<string> {
  const [file] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Download CSV" }).click(),
  ]);
  const path = await file.path();
  return readFileSync(path, "utf8");
}

/** The board on the page, and the CSV it downloads, are the server's board for these weights. The demo's own
 * model is evaluated in the background meanwhile: while the server's board moves, the page refreshes its figures
 * (its weights stay) and looks again. */
async function expectServerBoard(
  page: Page,
  request: APIRequestContext,
  m?: Record<string, number>,
  d?: Record<string, number>,
): Promise<ServerBoard> {
  let board: ServerBoard | null = null;
  await expect
    .poll(
      async () => {
        const before = await serverBoard(request, m, d);
        const shown = await shownRows(page);
        const csv = await downloadedCsv(page);
        const after = await serverBoard(request, m, d);
        if (before.csv !== after.csv) return "the server's board moved meanwhile";
        if (JSON.stringify(shown) === JSON.stringify(expected(before)) && csv === before.csv) {
          board = before;
          return "the same";
        }
        await page.getByRole("button", { name: "Refresh" }).click();
        return JSON.stringify({ shown, server: expected(before), csv, serverCsv: before.csv });
      },
      { timeout: 90_000, intervals: [500, 1000, 2000] },
    )
    .toBe("the same");
  return board as unknown as ServerBoard;
}

test("the Dynascore board re-ranks in the browser as the server would, its CSV matches, forks save and load", async ({
  page,
  request,
}) => {
  test.setTimeout(240_000);
  await register(page, "bo");
  const token = await sessionToken(page);

  // Two sets of uploaded predictions beside the demo's model: scored at once, with no speed or memory measured
  // (gaps the sliders can weigh away).
  const sets = await gql<{
    task: { datasets: { nodes: { name: string; size: number; access: string; parent: unknown }[] } };
  }>(
    request,
    token,
    `query ($code: String!) { task(code: $code) { id datasets { nodes { name size access parent { id } } } } }`,
    { code: TASK },
  );
  const scoring = sets.task.datasets.nodes.find((d) => d.access === "SCORING" && !d.parent);
  expect(scoring, "the demo has a scoring set").toBeTruthy();
  const size = scoring?.size ?? 0;
  const labels = ["positive", "negative", "neutral"];
  const names = [uniqueName("right-"), uniqueName("positive-")];
  for (const [i, name] of names.entries()) {
    const predictions = Array.from({ length: size }, (_, k) => ({ label: i === 0 ? labels[k % 3] : "positive" }));
    const answer = await gql<{ submitPredictions: { __typename: string } }>(
      request,
      token,
      `mutation ($input: SubmitPredictionsInput!) { submitPredictions(input: $input) { __typename ... on Error { message } } }`,
      { input: { taskCode: TASK, name, datasetName: scoring?.name, predictions, published: true } },
    );
    expect(answer.submitPredictions.__typename).toBe("ModelSubmitted");
  }
  // The demo model's evaluations (its perturbed copies' too) finish before the board is read: a board read while
  // they run has other default weights than the server's a moment later.
  await expect
    .poll(
      async () => {
        const board = await gql<{ task: { leaderboard: { rows: { model: { name: string }; missing: string[] }[] } } }>(
          request,
          token,
          `query ($code: String!) { task(code: $code) { id leaderboard { rows { model { name } missing } } } }`,
          { code: TASK },
        );
        const demo = board.task.leaderboard.rows.filter((r) => !names.includes(r.model.name));
        return demo.length > 0 && demo.every((r) => r.missing.length === 0);
      },
      { timeout: 180_000, intervals: [1_000, 2_000] },
    )
    .toBe(true);
  await page.getByRole("link", { name: "Leaderboards", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Leaderboards", level: 1 })).toBeVisible();
  await checkAccessibility(page, "leaderboards");
  await screenshots(page, "leaderboards");
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Leaderboards: Sentiment", level: 1 })).toBeVisible();
  await expect(boardTable(page).getByRole("rowheader", { name: names[1] })).toBeVisible();

  // The defaults: the same board as the server's, CSV included; the uploaded predictions have gaps.
  const defaults = await expectServerBoard(page, request);
  const gaps = defaults.rows.find((r) => r.model.name === names[0])?.missing ?? [];
  expect(gaps.length).toBeGreaterThan(0);

  // Weigh the gaps away: no request goes to the server, and the board is the server's for those weights.
  let asked = 0;
  page.on("request", (r) => {
    if (r.url().includes("/graphql")) asked += 1;
  });
  const weights: Record<string, number> = Object.fromEntries(defaults.metrics.map((m, i) => [m.name, i === 0 ? 4 : 1]));
  for (const metric of gaps) {
    await page.getByRole("slider", { name: metric, exact: true }).fill("0");
    weights[metric] = 0;
  }
  await expect(boardTable(page).locator("tbody tr").filter({ hasText: names[0] }).locator("td").first()).not.toHaveText(
    "–",
  );
  expect(asked, "sliders re-rank without asking the server").toBe(0);
  const dataset = { [scoring?.name ?? ""]: 1 };
  await expectServerBoard(page, request, weights, dataset);

  // Another weighting: the principal metric off, the second one heavy.
  const [first = "", second = ""] = defaults.metrics.map((m) => m.name);
  await page.getByRole("slider", { name: first, exact: true }).fill("0");
  await page.getByRole("slider", { name: second, exact: true }).fill("6.5");
  Object.assign(weights, { [first]: 0, [second]: 6.5 });
  await expectServerBoard(page, request, weights, dataset);

  await checkAccessibility(page, "dynascore board");
  await screenshots(page, "board");

  // Save the weights as a fork, go back to the defaults, load the fork.
  const fork = uniqueName("heavy-");
  await page.getByLabel("Fork name").fill(fork);
  await page.getByRole("button", { name: "Save fork" }).click();
  await expect(page.getByRole("status").filter({ hasText: `Saved the fork “${fork}”` })).toBeVisible();
  const link = await page.getByRole("link", { name: "Its link" }).getAttribute("href");
  await page.getByRole("button", { name: "Default weights" }).click();
  await expect(page.getByRole("slider", { name: second, exact: true })).toHaveValue("1");
  await expectServerBoard(page, request);
  await page.getByRole("button", { name: `Load fork ${fork}` }).click();
  await expect(page.getByRole("slider", { name: second, exact: true })).toHaveValue("6.5");
  await expect(page.getByRole("slider", { name: first, exact: true })).toHaveValue("0");
  await expect(page.getByText(`Weights of the fork “${fork}”`)).toBeVisible();
  await expectServerBoard(page, request, weights, dataset);

  // The fork's link opens the board with its weights.
  await page.goto(link ?? "/");
  await expect(page.getByRole("slider", { name: second, exact: true })).toHaveValue("6.5");
  await expectServerBoard(page, request, weights, dataset);

  // A fork name already used is refused, said beside the form.
  await page.getByLabel("Fork name").fill(fork);
  await page.getByRole("button", { name: "Save fork" }).click();
  await expect(page.locator(".forks").getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();

  // Whether each rank is ahead of the next beyond chance: the server's paired tests for the fork's weights, row by row
  // (asked again after a refresh while the demo model's evaluation may still be finishing).
  const toInputs = (w: Record<string, number>) => Object.entries(w).map(([name, weight]) => ({ name, weight }));
  await expect(async () => {
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.waitForLoadState("networkidle"); // the board's figures read again before the tests are asked for
    await page.getByRole("button", { name: "Test neighbouring ranks" }).click();
    await expect(boardTable(page).getByRole("columnheader", { name: "Next rank" })).toBeVisible({ timeout: 5_000 });
    const served = await gql<{
      task: {
        leaderboard: { adjacentTests: { upperKey: string; lowerKey: string; significant: boolean; items: number }[] };
      };
    }>(
      request,
      token,
      `query ($code: String!, $m: [WeightInput!], $d: [WeightInput!]) { task(code: $code) { id
        leaderboard(metricWeights: $m, datasetWeights: $d) { adjacentTests { upperKey lowerKey significant items } } } }`,
      { code: TASK, m: toInputs(weights), d: toInputs(dataset) },
    );
    const adjacent = served.task.leaderboard.adjacentTests;
    expect(adjacent.length).toBeGreaterThan(0);
    for (const t of adjacent) {
      const cell = boardTable(page).locator(`tr[data-model-id="${t.upperKey}"] td[data-adjacent]`);
      const said = t.items === 0 ? "no items in common" : t.significant ? "✓ ahead beyond chance" : "not beyond chance";
      await expect(cell).toContainText(said, { timeout: 2_000 });
    }
  }).toPass({ timeout: 90_000 });
  await screenshots(page, "board-tested");
  // another weighting puts the tests away: they were for the weights they were asked with
  await page.getByRole("slider", { name: second, exact: true }).fill("6");
  await expect(boardTable(page).getByRole("columnheader", { name: "Next rank" })).toHaveCount(0);

  // The board follows the task's evaluations: a model scored while the page is open appears without a refresh.
  const late = uniqueName("late-");
  const scored = await gql<{ submitPredictions: { __typename: string } }>(
    request,
    token,
    `mutation ($input: SubmitPredictionsInput!) { submitPredictions(input: $input) { __typename ... on Error { message } } }`,
    {
      input: {
        taskCode: TASK,
        name: late,
        datasetName: scoring?.name,
        predictions: Array.from({ length: size }, () => ({ label: "negative" })),
        published: true,
      },
    },
  );
  expect(scored.submitPredictions.__typename).toBe("ModelSubmitted");
  await expect(boardTable(page).getByRole("rowheader", { name: late })).toBeVisible({ timeout: 20_000 });
  await expect(page.getByRole("slider", { name: second, exact: true })).toHaveValue("6"); // the weights moved stay
});

test("Me shows my statistics and the round leaderboard ranks me; revoking a token works", async ({ page, request }) => {
  const username = await register(page, "mei");
  await openTask(page, TASK);
  await page.getByLabel("Statement").fill("The soup was cold and the service was painfully slow.");
  await page.getByRole("radio", { name: "negative", exact: true }).check();
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(page.getByRole("status").filter({ hasText: /model/ })).toContainText("The model answered");

  await page.getByRole("link", { name: "Me", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Me", level: 1 })).toBeVisible();
  const sentiment = page.getByRole("region", { name: "My statistics in Sentiment, scrollable" });
  await expect(sentiment.getByRole("row", { name: /Round 1/ })).toContainText("1");
  await expect(sentiment.getByRole("row", { name: /Total/ })).toBeVisible();

  // A new token, shown once; it works until revoked.
  await page.getByLabel("Token name").fill("laptop");
  await page.getByRole("button", { name: "Create token" }).click();
  const secret = (await page.locator("[data-secret]").textContent()) ?? "";
  expect(secret.length).toBeGreaterThan(10);
  const whoAmI = "query { me { username } }";
  expect((await gql<{ me: { username: string } | null }>(request, secret, whoAmI)).me?.username).toBe(username);
  await checkAccessibility(page, "me");
  await screenshots(page, "me");
  await page.getByRole("button", { name: "Revoke token laptop" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Revoked the token “laptop”." })).toBeVisible();
  await expect(page.getByRole("row", { name: /laptop/ })).toContainText("revoked");
  expect((await gql<{ me: { username: string } | null }>(request, secret, whoAmI)).me).toBeNull();

  // The round's annotators: I am on the board.
  await page.goto(`/leaderboards/${TASK}`);
  const annotators = page.getByRole("region", { name: "Annotators, scrollable" });
  await expect(annotators.getByRole("rowheader", { name: username, exact: true })).toBeVisible();

  // Revoking the token this page uses signs it out.
  await page.goto("/me");
  await page
    .getByRole("row", { name: /in use here/ })
    .getByRole("button", { name: /^Revoke/ })
    .click();
  await expect(page.getByRole("link", { name: "Sign in", exact: true })).toBeVisible();
});

test("Me lists my examples with their votes so far, and Retract asks first", async ({ page, browser, baseURL }) => {
  await register(page, "mex");
  await openTask(page, TASK);
  const text = `I adore every minute of this charming, funny film ${Date.now()}.`;
  await page.getByLabel("Statement").fill(text);
  await page.getByRole("radio", { name: "negative", exact: true }).check();
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(page.getByRole("status").filter({ hasText: /model/ })).toContainText("You fooled the model!");

  await page.goto("/me");
  const mine = page.getByRole("region", { name: "Sentiment" }).filter({ has: page.locator("[data-example]") });
  const item = mine.locator("li", { hasText: text });
  await expect(item).toContainText("fooled the model · waiting for votes: 0 of 3 votes");
  const exampleId = (await item.getAttribute("data-example")) ?? "";

  // Another person votes once; the list says so.
  const { context, page: validator } = await newPerson(browser, baseURL, "mexv");
  const vote = `mutation($input: ValidateExampleInput!) { validateExample(input: $input) { __typename } }`;
  const voted = await gql<{ validateExample: { __typename: string } }>(
    validator.request,
    await sessionToken(validator),
    vote,
    { input: { id: exampleId, label: "CORRECT" } },
  );
  expect(voted.validateExample.__typename).toBe("ValidationRecorded");
  await context.close();
  await page.reload();
  await expect(item).toContainText("waiting for votes: 1 of 3 votes");
  await checkAccessibility(page, "me, my examples");
  await screenshots(page, "me-examples");

  // Retract asks first, in place: kept, nothing changes; confirmed, the example is retracted and its button goes.
  const retract = item.getByRole("button", { name: /^Retract/ });
  await retract.click();
  await expect(item).toContainText("It stops counting; this is final.");
  await item.getByRole("button", { name: "Keep it" }).click();
  await expect(item).toContainText("waiting for votes");
  await retract.click();
  await item.getByRole("button", { name: "Yes, retract it" }).click();
  await expect(item).toContainText("retracted");
  await expect(item.getByRole("button", { name: /^Retract/ })).toHaveCount(0);
});
