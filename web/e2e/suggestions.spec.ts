// Suggestions beside the annotation form, against the demo's sentiment task and its built-in machine adversaries:
// ask for edits of a draft, read how each moves the model's probabilities, write one, and find it counted as
// ASSISTED on the example and in the round's table by source.
import type { APIRequestContext, Page } from "@playwright/test";
import { checkAccessibility, expect, openTask, screenshots, signInAsOwner, test, verdict } from "./fixtures";

// A short, plainly positive statement. The demo's sentiment model gives it positive at 0.88, and every call with all
// the available adversaries (perturbation-search, embedding-swap, sentiment-templates) returns suggestions:
// perturbation-search's typos of "love" ("olve", "lvoe", "loev") flip it each time, and sentiment-templates adds a
// contrast clause; tried 15 times in a row against the demo without an empty answer.
const DRAFT = "I love this movie.";

const SHIPPED = { name: "minilm-sentiment", backend: "python", config: { factory: "dynaforge_sentiment.model:load" } };

/**
 * Make the demo's shipped sentiment model the round's target: the draft below was tried against it, and another spec
 * (retraining) may have promoted a model trained on a few examples to the current round. Opens the next round with
 * the shipped model when the current one targets anything else.
 */
async function targetTheShippedModel(page: Page, request: APIRequestContext) {
  const raw = await page.evaluate(() => sessionStorage.getItem("dynaforge.session"));
  const token = (JSON.parse(raw ?? "{}") as { token: string }).token;
  const gql = async (query: string) => {
    const response = await request.post("/graphql", {
      data: { query },
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await response.json()) as { data: Record<string, unknown>; errors?: unknown[] };
    expect(body.errors ?? []).toEqual([]);
    return body.data;
  };
  const data = await gql('{ task(code: "sentiment") { currentRound { targetModels { name backend config } } } }');
  const models = (data.task as { currentRound: { targetModels: { backend: string; config: unknown }[] } }).currentRound
    .targetModels;
  const [only] = models;
  const shipped =
    models.length === 1 &&
    only !== undefined &&
    only.backend === SHIPPED.backend &&
    JSON.stringify(only.config) === JSON.stringify(SHIPPED.config);
  if (!shipped) {
    const opened = await gql(
      `mutation { openNextRound(input: {taskCode: "sentiment", targetModels: [{name: "${SHIPPED.name}", ` +
        `backend: "${SHIPPED.backend}", config: {factory: "${SHIPPED.config.factory}"}}]}) { __typename } }`,
    );
    expect((opened.openNextRound as { __typename: string }).__typename).toBe("RoundOpened");
  }
}

/** The "Assisted" row of the round's table by source, on the leaderboard page: its collected count. */
async function assistedCollected(page: Page): Promise<number> {
  await page.goto("/leaderboards/sentiment");
  const table = page.getByRole("table", { name: /by source/ });
  await expect(table).toBeVisible();
  await expect(table.getByRole("row")).toHaveCount(4); // the header and Human, Assisted, Machine
  const row = table.getByRole("row", { name: /^Assisted/ });
  return Number(await row.getByRole("cell").first().textContent());
}

test("suggested edits: ask, read, use one, and it counts as assisted", async ({ page, request }) => {
  test.setTimeout(120_000);
  // The demo's admin: the suite registers as many accounts as the server takes from one address in an hour.
  await signInAsOwner(page);
  await targetTheShippedModel(page, request);
  const before = await assistedCollected(page);

  await openTask(page, "sentiment");
  const panel = page.getByRole("region", { name: "Suggestions" });
  const suggest = panel.getByRole("button", { name: "Suggest edits" });
  await expect(suggest).toBeDisabled(); // no draft yet
  await expect(panel.getByLabel("Adversary")).toHaveValue(""); // all available adversaries

  // The draft breaks a rule: the field says so, as a submission's would.
  await page.getByLabel("Statement").fill("ok");
  await page.getByRole("radio", { name: "negative", exact: true }).check();
  await suggest.click();
  await expect(page.getByText("Statement needs at least 3 characters.")).toBeVisible();

  // A draft that already fools the model: nothing to suggest.
  await page.getByLabel("Statement").fill(DRAFT);
  await suggest.click();
  await expect(panel).toContainText("Your draft already fools the model", { timeout: 30_000 });
  await expect(panel.getByRole("list", { name: "Suggested edits" })).toHaveCount(0);

  // The draft with its true label: edits that flip the model.
  await page.getByRole("radio", { name: "positive", exact: true }).check();
  await expect(panel).toContainText("Your draft has changed since");
  await suggest.click();
  const list = panel.getByRole("list", { name: "Suggested edits" });
  await expect(list).toBeVisible({ timeout: 30_000 });
  const first = list.locator(":scope > li").first();
  await expect(first).toContainText(/The model predicts (positive|negative|neutral)/);
  const moves = first.getByRole("list", { name: /How the probabilities moved/ }).getByRole("listitem");
  await expect(moves).toHaveCount(3);
  await expect(moves.first()).toHaveText(/^(positive|negative|neutral) \d\.\d\d → \d\.\d\d$/);
  await expect(first.locator("ins").first()).toBeVisible(); // what changed from the draft is marked
  const adversary = (await first.locator(".chip").first().textContent()) ?? "";
  expect(["perturbation-search", "embedding-swap", "sentiment-templates"]).toContain(adversary);
  await expect(first).toContainText(`Why, by ${adversary}:`);
  await checkAccessibility(page, "annotate with suggestions");
  await screenshots(page, "annotate-suggestions");

  // Use it: the form takes its text, and says so; forgetting it and using it again.
  await first.getByRole("button", { name: /Use this/ }).click();
  await expect(page.getByLabel("Statement")).not.toHaveValue(DRAFT);
  const note = page.getByText(`Written from a suggestion by ${adversary}`);
  await expect(note).toBeVisible();
  await expect(first).toContainText("in the form");
  await expect(panel).not.toContainText("Your draft has changed since"); // it took the suggestion, nothing else
  await page.getByRole("button", { name: "Forget the suggestion" }).click();
  await expect(note).toHaveCount(0);
  await first.getByRole("button", { name: /Use this/ }).click();
  await expect(note).toBeVisible();
  await screenshots(page, "annotate-suggestion-used");

  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("You fooled the model!");
  await expect(verdict(page)).toContainText(`Source: Assisted by ${adversary}`);
  await expect(note).toHaveCount(0); // submitted: the next example starts on its own
  await expect(list).toHaveCount(0);
  await checkAccessibility(page, "annotate, assisted verdict");
  await screenshots(page, "annotate-assisted-verdict");

  // The round's table by source counts it.
  expect(await assistedCollected(page)).toBe(before + 1);
  await checkAccessibility(page, "leaderboard with the table by source");
  await screenshots(page, "leaderboard-by-source");
});
