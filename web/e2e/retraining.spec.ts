// Retraining against the demo, signed in as its admin (an owner of every task). A round's accepted examples are
// seeded through GraphQL (an import, then the round's train/dev/test sets). The Retraining section lists the task's
// recipes (or says it declares none), and the round x model matrix has a row per registered model and a column per
// round with a test set; a model the current round does not target is promoted from it after a confirmation, and
// the Rounds section then says where the new round's target came from. Where the task has a training recipe, a
// candidate is trained from the page with live progress (another job is cancelled), evaluated, and promoted.
import { readFileSync } from "node:fs";
import type { APIRequestContext, Page } from "@playwright/test";
import { checkAccessibility, expect, gql, manage, screenshots, sessionToken, signInAsOwner, test } from "./fixtures";

const TASK = "sentiment";

interface Target {
  name: string;
  backend: string;
  config: { kwargs?: Record<string, unknown> } & Record<string, unknown>;
  registered: { id: string; name: string; origin: string; weights: string | null } | null;
}

const CURRENT = `query ($code: String!) {
  task(code: $code) {
    id
    currentRound { number targetModels { name backend config registered { id name origin weights } } }
    trainingRecipes { name }
  }
}`;

async function current(request: APIRequestContext, token: string) {
  const data = await gql<{
    task: { currentRound: { number: number; targetModels: Target[] }; trainingRecipes: { name: string }[] | null };
  }>(request, token, CURRENT, { code: TASK });
  return { round: data.task.currentRound, recipes: data.task.trainingRecipes ?? [] };
}

const IMPORT = `mutation ($input: ImportExamplesInput!) {
  importExamples(input: $input) { __typename ... on ExamplesImported { count roundNumber } ... on Error { message } }
}`;
const SPLIT = `mutation ($input: CreateRoundDatasetsInput!) {
  createRoundDatasets(input: $input) {
    __typename ... on DatasetsCreated { datasets { id name split size } } ... on Error { message }
  }
}`;

const PRAISE = ["lovely", "wonderful", "delightful", "superb", "charming"];
const SCORN = ["dreadful", "awful", "miserable", "tedious", "bland"];
const THINGS = ["soup", "film", "concert", "train ride"];

const WHO = ["I thought", "my sister said", "we agreed"];

/** 120 accepted examples, half positive and half negative, into the current round, split into its data sets (its
 * test split of 12 is large enough to score on: MIN_SCORING_SET_SIZE is 10). */
async function seedRound(request: APIRequestContext, token: string, stamp: string) {
  const lines = THINGS.flatMap((thing, i) =>
    PRAISE.flatMap((praise, j) =>
      WHO.flatMap((who, k) => [
        { statement: `The ${thing} was ${praise}, ${who}, ${stamp} ${i}${j}${k}.`, label: "positive" },
        { statement: `The ${thing} was ${SCORN[j]}, ${who}, ${stamp} ${i}${j}${k}.`, label: "negative" },
      ]),
    ),
  ).map((fields) => JSON.stringify({ format: "dynaforge.example/1", fields, status: "ACCEPTED", fooled: false }));
  const response = await request.post("/graphql", {
    headers: { authorization: `Bearer ${token}`, "apollo-require-preflight": "true" },
    multipart: {
      operations: JSON.stringify({ query: IMPORT, variables: { input: { taskCode: TASK, file: null } } }),
      map: JSON.stringify({ 0: ["variables.input.file"] }),
      0: { name: "examples.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from(lines.join("\n")) },
    },
  });
  const imported = (
    (await response.json()) as { data: { importExamples: { __typename: string; roundNumber: number } } }
  ).data.importExamples;
  expect(imported.__typename, JSON.stringify(imported)).toBe("ExamplesImported");
  const round = imported.roundNumber;
  const made = await gql<{
    createRoundDatasets: { __typename: string; datasets?: { id: string; name: string; split: string; size: number }[] };
  }>(request, token, SPLIT, { input: { taskCode: TASK, round, seed: 1 } });
  expect(made.createRoundDatasets.__typename, JSON.stringify(made)).toBe("DatasetsCreated");
  const train = made.createRoundDatasets.datasets?.find((d) => d.name === `r${round}-train`);
  expect(train).toBeTruthy();
  return { round, train: train as { name: string; size: number } };
}

const matrix = (page: Page) => page.getByRole("table", { name: "Registered models on each round's test set" });

/** The matrix's rows of the models named `name` (its row header: the name, then its weights and when it was
 * registered). */
const rowsOf = (page: Page, name: string) =>
  matrix(page)
    .getByRole("row")
    .filter({
      has: page.getByRole("rowheader", {
        name: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s`),
      }),
    });

test("an owner compares the registered models round by round and promotes one to target the next round", async ({
  page,
}) => {
  test.setTimeout(180_000);
  await signInAsOwner(page);
  const token = await sessionToken(page);
  const { round: n } = await seedRound(page.request, token, `compare ${Date.now().toString(36)}`);
  const before = await current(page.request, token);
  const [original] = before.round.targetModels;
  if (!original?.registered) throw new Error(`round ${n} of ${TASK} has no registered target`);

  // A second version of the same model (another configuration) targets the round, so the first one is promotable.
  const variant = `${original.name}-cpu`;
  const set = await gql<{ setTargetModels: { __typename: string; message?: string } }>(
    page.request,
    token,
    `mutation ($input: SetTargetModelsInput!) { setTargetModels(input: $input) { __typename ... on Error { message } } }`,
    {
      input: {
        taskCode: TASK,
        models: [
          {
            name: variant,
            backend: original.backend,
            config: { ...original.config, kwargs: { ...(original.config.kwargs ?? {}), device: "cpu" } },
          },
        ],
      },
    },
  );
  expect(set.setTargetModels.__typename, JSON.stringify(set)).toBe("TargetModelsSet");

  await manage(page, TASK, "retraining");
  await expect(page.getByRole("heading", { name: "Retraining", level: 2 })).toBeVisible();
  if (before.recipes.length === 0) await expect(page.getByText("declares no training recipe")).toBeVisible();
  else
    await expect(
      page
        .getByRole("table", { name: `Hyper-parameters of ${before.recipes[0]?.name}` })
        .or(page.getByText("It takes no hyper-parameters.")),
    ).toBeVisible();

  // A column for the round's test set, a row per registered model; the current target has no Promote button.
  const table = matrix(page);
  await expect(table.getByRole("columnheader", { name: new RegExp(`^Round ${n}\\b`) })).toContainText(`r${n}-test`);
  const originalRow = rowsOf(page, original.name);
  const variantRow = rowsOf(page, variant);
  await expect(variantRow).toContainText(`Round ${n}'s target`);
  await expect(variantRow).toContainText(`round ${n}`);
  await expect(variantRow.getByRole("button", { name: /^Promote to next round/ })).toHaveCount(0);
  const digest = original.registered.weights?.slice(0, 12);
  if (digest) await expect(originalRow.first()).toContainText(digest);
  await checkAccessibility(page, "owner retraining");
  await screenshots(page, "owner-retraining");

  // Promote the first version back, after a confirmation that names the next round.
  await originalRow
    .first()
    .getByRole("button", { name: /^Promote to next round/ })
    .click();
  const dialog = page.getByRole("dialog", { name: `Promote ${original.name} to round ${n + 1}?` });
  await expect(dialog).toBeVisible();
  await dialog.getByLabel(`Description of round ${n + 1}`).fill("Back to the first version.");
  await checkAccessibility(page, "owner retraining, promoting");
  await dialog.getByRole("button", { name: `Open round ${n + 1} with ${original.name}` }).click();
  await expect(dialog).toBeHidden();
  await expect(
    page.getByRole("status").filter({ hasText: `Round ${n + 1} is open, targeting ${original.name}` }),
  ).toBeVisible();
  await expect(originalRow.first()).toContainText(`Round ${n + 1}'s target`);
  await expect(variantRow.getByRole("button", { name: /^Promote to next round/ })).toBeVisible();

  // The Rounds section says where the new round's target came from.
  await page.getByRole("link", { name: "Rounds", exact: true }).click();
  const targets = page.getByRole("table", { name: `Target models of round ${n + 1}` });
  const target = targets.getByRole("row").filter({ hasText: original.name });
  await expect(target).toContainText(/shipped with the task's plugin|configured|model store/);
  if (digest) await expect(target).toContainText(digest);
  const everyRound = page.getByRole("table", { name: "Every round" });
  await expect(everyRound.getByRole("row").filter({ hasText: variant })).toHaveCount(1);
  await checkAccessibility(page, "owner rounds with the registry");
  await screenshots(page, "owner-rounds-registry");
});

test("an owner trains a candidate with live progress, cancels another job, and promotes the candidate", async ({
  page,
}) => {
  test.setTimeout(600_000);
  // What the page's websocket carries: the subscription's request, and the progress events.
  const sent: string[] = [];
  const received: string[] = [];
  page.on("websocket", (ws) => {
    ws.on("framesent", (frame) => sent.push(String(frame.payload)));
    ws.on("framereceived", (frame) => received.push(String(frame.payload)));
  });
  await signInAsOwner(page);
  const token = await sessionToken(page);
  const { recipes } = await current(page.request, token);
  test.skip(recipes.length === 0, `${TASK} declares no training recipe yet: the training part is skipped`);
  const stamp = `train ${Date.now().toString(36)}`;
  const { round: m, train } = await seedRound(page.request, token, stamp);
  const parent = (await current(page.request, token)).round.targetModels[0]?.name ?? "";

  await manage(page, TASK, "retraining");
  const form = page.getByRole("form", { name: "Train a candidate" });
  const sets = form.getByRole("group", { name: "Data sets to train on" });
  await expect(sets.getByRole("checkbox", { name: train.name })).toBeChecked();

  // Nothing to train on: refused, and said beside the data sets.
  for (const box of await sets.getByRole("checkbox").all()) await box.uncheck();
  await form.getByRole("button", { name: "Train a candidate" }).click();
  await expect(form.getByRole("alert")).toContainText(/data set/);
  await expect(sets).toContainText(/at least one data set/);

  await sets.getByRole("checkbox", { name: train.name }).check();
  await form.getByLabel("Seed", { exact: true }).fill("3");
  await form.getByRole("button", { name: "Train a candidate" }).click();
  await expect(form.getByRole("status")).toContainText(
    `Training job queued: recipe ${recipes[0]?.name} on ${train.name}`,
  );
  const jobs = page.getByRole("list", { name: "Training jobs, newest first" });
  const first = jobs.getByRole("listitem").filter({ hasText: "seed 3" });
  await expect(first.getByRole("progressbar")).toBeVisible();

  // A second job, cancelled while it waits or runs.
  await form.getByLabel("Seed", { exact: true }).fill("4");
  await form.getByRole("button", { name: "Train a candidate" }).click();
  const second = jobs.getByRole("listitem").filter({ hasText: "seed 4" });
  await second.getByRole("button", { name: "Cancel training" }).click();
  await expect(second).toHaveAttribute("data-job-status", "CANCELLED");
  await expect(second.getByRole("button", { name: "Cancel training" })).toHaveCount(0);

  await expect(first).toHaveAttribute("data-job-status", "SUCCEEDED", { timeout: 240_000 });
  await expect(first).toContainText("Candidate");
  // The page followed the jobs over the websocket, from the list's cursor (it never polls).
  expect(sent.some((frame) => frame.includes("trainingJobUpdated") && frame.includes('"after":"'))).toBe(true);
  expect(received.some((frame) => /"trainingJobUpdated".*"status":"(RUNNING|SUCCEEDED)"/.test(frame))).toBe(true);

  // The candidate in the matrix: trained on the round's train set, from the round's target.
  const table = matrix(page);
  const candidate = table
    .getByRole("row")
    .filter({ hasText: `from ${train.name} (` })
    .last();
  await expect(candidate).toContainText(`from ${train.name} (${train.size} examples)`);
  await expect(candidate).toContainText(parent);
  const lineage = `trained on the platform from ${train.name} (${train.size} examples), parent ${parent}`;

  // Promoted: the next round targets it, and the Rounds section says where it came from.
  await candidate.getByRole("button", { name: /^Promote to next round/ }).click();
  const dialog = page.getByRole("dialog", { name: /^Promote .* to round \d+\?$/ });
  await dialog.getByRole("button", { name: /^Open round \d+ with / }).click();
  await expect(page.getByRole("status").filter({ hasText: /^Round \d+ is open, targeting / })).toContainText(lineage);
  await expect(candidate).toContainText(/Round \d+'s target/);
  await page.getByRole("link", { name: "Rounds", exact: true }).click();
  await expect(page.locator("[data-lineage]").first()).toHaveText(lineage);

  // Its evaluation on a round's test set, with the intervals (the evaluations queue behind the demo's own).
  await page.getByRole("link", { name: "Retraining", exact: true }).click();
  await expect(table.getByRole("columnheader", { name: new RegExp(`^Round ${m}\\b`) })).toContainText(`r${m}-test`);
  const figures = candidate.locator("[data-metric]").first();
  await expect(figures).toHaveText(/^\w+ \d+\.\d\d \[\d+\.\d\d–\d+\.\d\d\]$/, { timeout: 360_000 });
  await expect(candidate.locator("[data-fooling]").first()).toHaveText(/^fooled \d\.\d\d \[\d\.\d\d–\d\.\d\d\]$/);

  // The candidate against its parent, item by item, on the round's test set: asked again until the parent's
  // evaluation there is done too (until then the panel says it is not DONE yet).
  const parentId = await candidate.getAttribute("data-parent");
  expect(parentId).toBeTruthy();
  const compare = page.getByRole("region", { name: "Compare two models item by item" });
  await compare
    .getByLabel("Model", { exact: true })
    .selectOption((await candidate.getAttribute("data-registered")) ?? "");
  await compare.getByLabel("Against", { exact: true }).selectOption(parentId ?? "");
  await compare.getByLabel("Test set", { exact: true }).selectOption({ label: `Round ${m} (r${m}-test)` });
  const paired = compare.locator("[data-paired]");
  await expect(async () => {
    await compare.getByRole("button", { name: "Compare" }).click();
    await expect(paired).toBeVisible({ timeout: 5_000 });
  }).toPass({ timeout: 360_000, intervals: [5_000] });
  await expect(paired).toContainText(/McNemar p = (< 0\.001|\d\.\d{3}), \d+ items/);
  await expect(paired).toContainText(/paired bootstrap, \d+ resamples, p = /);
  await checkAccessibility(page, "owner retraining, trained");
  await screenshots(page, "owner-retraining-trained");

  // The owner downloads the candidate's evaluation on the round's test set item by item.
  await first.getByRole("link", { name: "its evaluations" }).click();
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: `Download item by item (JSONL) for r${m}-test`, exact: true }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/-predictions\.jsonl$/);
  const lines = readFileSync(await file.path(), "utf-8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.every((item) => item.right === !item.fooled && typeof item.position === "number")).toBe(true);
});
