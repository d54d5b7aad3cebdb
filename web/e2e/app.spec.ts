// The web app against a real demo server: register, annotate each task (QA by selecting a span), verdicts,
// validation changing an open page's counters live, the live feed of fooling examples, accessibility and
// screenshots of every screen, GraphiQL offline, and the first-load size of an annotate page (W1).
import type { Page } from "@playwright/test";
import { checkAccessibility, expect, newPerson, openTask, register, screenshots, test, verdict } from "./fixtures";

// Unmistakable statements: the demo's sentiment model reads them right, so the verdict follows the label given.
const PRAISE = "I absolutely love this wonderful film; the acting is brilliant and the music is a delight.";

async function writeSentiment(page: Page, statement: string, label: string) {
  await page.getByLabel("Statement").fill(statement);
  await page.getByRole("radio", { name: label, exact: true }).check();
  await page.getByRole("button", { name: "Submit" }).click();
}

test("register, then a not-fooled and a fooled verdict, then retract", async ({ page }) => {
  await register(page, "ada");
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Sentiment", level: 1 })).toBeVisible();
  await openTask(page, "sentiment");
  await writeSentiment(page, PRAISE, "positive");
  await expect(verdict(page)).toContainText("The model was not fooled.");
  await expect(verdict(page)).toContainText("The model answered: positive");
  await expect(page.getByRole("list", { name: "The model's probabilities" }).getByRole("listitem")).toHaveCount(3);
  await checkAccessibility(page, "annotate, not fooled");

  // Ctrl+Enter submits; number keys choose a label (2: the task's second label).
  await page.getByLabel("Statement").fill(`${PRAISE} Truly.`);
  await page.getByRole("radio", { name: "negative", exact: true }).focus();
  await page.keyboard.press("2");
  await expect(page.getByRole("radio", { name: "negative", exact: true })).toBeChecked();
  await page.setViewportSize({ width: 390, height: 700 }); // a phone: the verdict starts below the fold
  await page.getByLabel("Statement").press("Control+Enter");
  await expect(verdict(page)).toContainText("You fooled the model!");
  // The verdict comes into view, tied to what was sent: the writer's label beside the model's, marked among its
  // probabilities.
  await expect(verdict(page)).toBeInViewport();
  await expect(verdict(page)).toContainText("You said negative · The model answered: positive");
  await expect(verdict(page).getByRole("listitem").filter({ hasText: "yours" })).toContainText("negative");
  await screenshots(page, "annotate-sentiment-fooled");
  await page.getByRole("button", { name: "Retract" }).click();
  await expect(verdict(page)).toContainText("(retracted)");
  // An edit of the draft takes away the verdict and the Retract that were about the example as sent.
  await page.getByLabel("Statement").fill(`${PRAISE} Truly, and more.`);
  await expect(verdict(page)).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Retract" })).toHaveCount(0);
});

test("errors are shown where they happen, in words", async ({ page }) => {
  await page.goto("/register");
  await page.getByLabel("Username").fill("x");
  await page.getByLabel("Email").fill("not-an-address");
  await page.getByLabel("Password").fill("short");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();
  await expect(page.getByLabel("Username")).toHaveAttribute("aria-invalid", "true");
  await screenshots(page, "register-errors");

  await page.goto("/signin");
  await page.getByLabel("Username").fill("nobody-here");
  await page.getByLabel("Password").fill("wrong password");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();

  await register(page, "eve");
  await openTask(page, "sentiment");
  await page.getByLabel("Statement").fill("ok");
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(page.getByText("Statement needs at least 3 characters.")).toBeVisible();
  await expect(page.getByText("Label is required.")).toBeVisible();
  // Editing a field takes its error away; the others stay until their fields change.
  await page.getByLabel("Statement").fill("A statement long enough.");
  await expect(page.getByText("Statement needs at least 3 characters.")).toHaveCount(0);
  await expect(page.getByText("Label is required.")).toBeVisible();
});

test("annotate the NLI task", async ({ page }) => {
  await register(page, "nia");
  await openTask(page, "nli");
  await expect(page.locator('[data-context-field="premise"]')).not.toBeEmpty();
  await page.getByLabel("Hypothesis").fill("Somebody is doing something somewhere.");
  await page.getByRole("radio", { name: "entailment", exact: true }).check();
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("The model answered:");
  await expect(verdict(page)).toContainText(/You fooled the model!|The model was not fooled\./);
  await checkAccessibility(page, "annotate nli");
  await screenshots(page, "annotate-nli");
});

test("a draft survives another context, another page and a new visit", async ({ page }) => {
  await register(page, "drafts");
  // Sentiment writes without a context: its one draft comes back after a walk to another page.
  await openTask(page, "sentiment");
  await page.getByLabel("Statement").fill("Half-written: the soundtrack was");
  await page.getByRole("link", { name: "Leaderboards" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  await page.goBack();
  await expect(page.getByLabel("Statement")).toHaveValue("Half-written: the soundtrack was");
  await expect(page.locator("[data-draft-restored]")).toBeVisible();

  // NLI writes on a premise: "Another context" keeps the draft of the one left, and offers the way back.
  await openTask(page, "nli");
  const premise = page.locator('[data-context-field="premise"]');
  const first = (await premise.textContent()) ?? "";
  await page.getByLabel("Hypothesis").fill("Nobody is outdoors.");
  await page.getByRole("radio", { name: "contradiction", exact: true }).check();
  for (let n = 0; (await premise.textContent()) === first; n++) {
    expect(n, "another context is served").toBeLessThan(10);
    await page.getByRole("button", { name: "Another context" }).click();
    await expect(page.getByRole("button", { name: "Another context" })).toBeEnabled();
  }
  await expect(page.getByLabel("Hypothesis")).toHaveValue("");
  await page.getByRole("button", { name: "Back to that context" }).click();
  await expect(premise).toHaveText(first);
  await expect(page.getByLabel("Hypothesis")).toHaveValue("Nobody is outdoors.");
  await expect(page.getByRole("radio", { name: "contradiction", exact: true })).toBeChecked();

  // Away and back again: the served premise may differ, and the page offers the draft on the other one.
  await page.getByRole("link", { name: "Tasks" }).click();
  await openTask(page, "nli");
  if ((await premise.textContent()) !== first) {
    await page.getByRole("button", { name: "Open it" }).click();
    await expect(premise).toHaveText(first);
  }
  await expect(page.getByLabel("Hypothesis")).toHaveValue("Nobody is outdoors.");
  await checkAccessibility(page, "annotate with a draft");

  // Sent, the draft is gone: a new visit starts empty.
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("The model answered:");
  await page.getByRole("link", { name: "Tasks" }).click();
  await openTask(page, "nli");
  if ((await premise.textContent()) === first) await expect(page.getByLabel("Hypothesis")).toHaveValue("");
  await expect(page.getByRole("button", { name: "Open it" })).toHaveCount(0);
});

test("the hate speech task suggests a break after half an hour of work; instructions fold on a second visit", async ({
  page,
}) => {
  await page.clock.install();
  await register(page, "breaks");
  await openTask(page, "hatespeech");
  await expect(page.locator("details.instructions")).toHaveAttribute("open", "");
  await page.getByLabel("Statement").fill("Still writing");
  // Half an hour of work, a key pressed every few minutes (ten idle minutes would count as a break).
  for (let step = 0; step < 7; step++) {
    await page.getByLabel("Statement").press("End");
    await page.clock.fastForward("05:00");
  }
  await page.getByLabel("Statement").press("End");
  await page.clock.fastForward("00:30");
  const reminder = page.getByRole("alert").filter({ hasText: "Take a short break" });
  await expect(reminder).toBeVisible();
  await checkAccessibility(page, "break reminder");
  await reminder.getByRole("button", { name: "I’m back" }).click();
  await expect(reminder).toHaveCount(0);
  // A second visit: the instructions start folded, the form in view.
  await page.getByRole("link", { name: "Tasks" }).click();
  await openTask(page, "hatespeech");
  await expect(page.locator("details.instructions")).not.toHaveAttribute("open", "");
});

test("annotate the QA task by selecting the answer in the passage", async ({ page }) => {
  await register(page, "quinn");
  await openTask(page, "qa");
  const passage = page.locator('[data-context-field="passage"]');
  await page.getByLabel("Question").fill("What does the passage say about it?");
  await passage.scrollIntoViewIfNeeded();
  // Double-click a word of the passage (a person's selection): the first year, or else the first long word.
  const box = await passage.evaluate((element) => {
    const node = element.firstChild as Text;
    const text = node.textContent ?? "";
    const match = /\b\d{4}\b/.exec(text) ?? /\b[A-Za-z]{6,}\b/.exec(text);
    if (!match) throw new Error("no word to select in the passage");
    const range = document.createRange();
    range.setStart(node, match.index);
    range.setEnd(node, match.index + match[0].length);
    const rect = range.getClientRects()[0];
    if (!rect) throw new Error("the word is not on screen");
    return { x: rect.x + rect.width / 2, y: rect.y + rect.height / 2, word: match[0] };
  });
  await page.mouse.dblclick(box.x, box.y);
  await expect(page.getByLabel("Answer")).toHaveValue(box.word);
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("The model answered:");
  await expect(verdict(page)).toContainText(/You fooled the model!|The model was not fooled\./);
  // Why: the word overlap against the threshold that decided, and the model's span marked in the passage.
  await expect(verdict(page)).toContainText(
    /Word-overlap F1 of the model's answer with yours: \d\.\d\d, (below|at|above) the threshold of 0\.40: the model is (not )?fooled\./,
  );
  await expect(verdict(page).locator(".span-in-passage mark")).not.toBeEmpty();
  // The counters say what they mean.
  await page.getByText("What these mean").click();
  await expect(page.locator(".glossary")).toContainText("Verified model error rate: verified ÷ collected.");
  await checkAccessibility(page, "annotate qa");
  await screenshots(page, "annotate-qa");
});

test("annotate the hate speech task", async ({ page }) => {
  await register(page, "hal");
  await openTask(page, "hatespeech");
  const labels = page.getByRole("group", { name: "Label", exact: true }).getByRole("radio");
  // Labels as the task titles them, not as identifiers.
  await expect(labels).toHaveCount(2);
  await expect(page.getByRole("radio", { name: "not hateful", exact: true })).toBeVisible();
  await page.getByLabel("Statement").fill("What a lovely morning to walk the dog in the park.");
  await labels.last().check();
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("The model answered:");
  await expect(verdict(page)).toContainText("You said not hateful");
  await expect(verdict(page)).not.toContainText("not_hateful");
  await checkAccessibility(page, "annotate hatespeech");
  await screenshots(page, "annotate-hatespeech");
});

test("three validators accept an example and the author's open page counts it without a reload", async ({
  page,
  browser,
  baseURL,
}) => {
  test.setTimeout(180_000);
  await register(page, "author");
  await openTask(page, "sentiment");
  await writeSentiment(page, `${PRAISE} Best evening in years.`, "negative");
  await expect(verdict(page)).toContainText("You fooled the model!");
  const verified = page.locator('[data-counter="verified"]');
  const before = Number(await verified.textContent());

  for (let i = 0; i < 3; i++) {
    const { context, page: validator } = await newPerson(browser, baseURL, `val${i}`);
    await validator.getByRole("link", { name: "Validate", exact: true }).click();
    await validator.getByRole("link", { name: "Sentiment", exact: true }).click();
    // Vote Correct on everything in this validator's queue (the author's example among them).
    for (let n = 0; n < 20; n++) {
      const correct = validator.getByRole("button", { name: "Correct", exact: true });
      const empty = validator.getByText("Nothing to validate here now.");
      await expect(correct.or(empty)).toBeVisible();
      if (await empty.isVisible()) break;
      if (i === 0 && n === 0) {
        await checkAccessibility(validator, "validate");
        await screenshots(validator, "validate-item");
      }
      const queue = validator.locator("[data-queue-size]");
      const size = await queue.textContent();
      await correct.click();
      await expect(validator.getByRole("status").filter({ hasText: "Voted correct." })).toBeVisible();
      await expect(queue).not.toHaveText(size ?? ""); // the next example (or none) is served
    }
    if (i === 0) await screenshots(validator, "validate-empty");
    await context.close();
  }
  await expect(verified).not.toHaveText(String(before));
  expect(Number(await verified.textContent())).toBeGreaterThan(before);
});

test("a validator votes with the keyboard only", async ({ page, browser, baseURL }) => {
  await register(page, "kauthor");
  await openTask(page, "sentiment");
  await writeSentiment(page, `${PRAISE} Said with keys alone.`, "negative");
  await expect(verdict(page)).toContainText("You fooled the model!");

  const { context, page: validator } = await newPerson(browser, baseURL, "kval");
  await validator.goto("/validate/sentiment");
  const card = validator.getByRole("article", { name: "Example to validate" });
  const empty = validator.getByText("Nothing to validate here now.");
  await expect(card).toBeVisible();
  await expect(validator.getByRole("button", { name: "Correct", exact: true })).toHaveAttribute(
    "aria-keyshortcuts",
    "C",
  );

  // F opens the flag panel with the focus in its reason; keys typed there are text, not votes; Escape closes it.
  await validator.keyboard.press("f");
  const reason = validator.getByRole("textbox", { name: "Reason" });
  await expect(reason).toBeFocused();
  await validator.keyboard.type("cs");
  await expect(reason).toHaveValue("cs");
  await expect(validator.getByRole("status").filter({ hasText: /Voted|Skipped/ })).toHaveCount(0);
  await validator.keyboard.press("Escape");
  await expect(reason).toBeHidden();
  await expect(card).toBeFocused();

  // I opens the correction panel at its first control; Escape again.
  await validator.keyboard.press("i");
  await expect(validator.getByRole("group", { name: "What should the answer be? (optional)" })).toBeVisible();
  await validator.keyboard.press("Escape");
  await expect(card).toBeFocused();

  // S skips, C votes correct: each serves the next example, which takes the focus.
  await validator.keyboard.press("s");
  await expect(validator.getByRole("status").filter({ hasText: "Skipped" })).toBeVisible();
  await expect(card).toBeFocused();
  // The tally is not shown before the vote; the vote reveals it, and where the example came from.
  await expect(card).not.toContainText("Votes");
  const voted = (await card.textContent()) ?? "";
  await validator.keyboard.press("c");
  const said = validator.getByRole("status").filter({ hasText: "Voted correct." });
  await expect(said).toContainText(/Votes now: \d+ correct, \d+ incorrect, \d+ flagged\. A (person|machine)/);
  await expect(card.or(empty)).toBeVisible();
  if (await card.isVisible()) await expect(card).toBeFocused();
  await checkAccessibility(validator, "validate with keys");

  // Undo, within its few seconds, takes the vote back: the same example is served again.
  await said.getByRole("button", { name: "Undo" }).click();
  await expect(validator.getByRole("status").filter({ hasText: "Your vote is withdrawn" })).toBeVisible();
  await expect(card).toHaveText(voted);
  await context.close();
});

/** Waits until the page's modelFooled subscription is sent (the next websocket the page opens). */
function feedSubscribed(page: Page) {
  return page
    .waitForEvent("websocket")
    .then((ws) => ws.waitForEvent("framesent", (frame) => String(frame.payload).includes("modelFooled")));
}

test("the live feed shows owners every fooling example, everyone else their own", async ({
  page,
  browser,
  baseURL,
}) => {
  // the task's owner (the demo admin) follows every fooling example as it is written
  await page.goto("/signin");
  await page.getByLabel("API token").fill(process.env.DYNAFORGE_E2E_TOKEN ?? "");
  await page.getByRole("button", { name: "Use token" }).click();
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
  const ownerSubscribed = feedSubscribed(page);
  await openTask(page, "sentiment");
  await ownerSubscribed;
  const watcher = await newPerson(browser, baseURL, "watcher");
  const watcherSubscribed = feedSubscribed(watcher.page);
  await openTask(watcher.page, "sentiment");
  await watcherSubscribed;

  const theirs = `${PRAISE} Feed check ${Date.now()}.`;
  const writer = await newPerson(browser, baseURL, "writer");
  await openTask(writer.page, "sentiment");
  await writeSentiment(writer.page, theirs, "negative");
  await expect(verdict(writer.page)).toContainText("You fooled the model!");
  await expect(page.getByRole("list", { name: "Examples that fooled the model" })).toContainText(theirs);
  await screenshots(page, "annotate-live-feed");

  // anyone else: that someone's example fooled the model would tell its label; their own come at once
  const own = `${PRAISE} My own feed check ${Date.now()}.`;
  await writeSentiment(watcher.page, own, "negative");
  const watched = watcher.page.getByRole("list", { name: "Your examples that fooled the model" });
  await expect(watched).toContainText(own);
  await expect(watched).not.toContainText(theirs);
  await writer.context.close();
  await watcher.context.close();
});

test("the demo token signs in, and sign out forgets it", async ({ page }) => {
  await page.goto("/signin");
  await page.getByLabel("API token").fill(process.env.DYNAFORGE_E2E_TOKEN ?? "");
  await page.getByRole("button", { name: "Use token" }).click();
  await expect(page.getByText("demo", { exact: true })).toBeVisible();
  await page.reload(); // kept for this tab
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("link", { name: "Sign in", exact: true })).toBeVisible();
  expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain("dfk_");
  expect(page.url()).not.toContain("dfk_");
});

test("every screen is accessible, at a phone's and a laptop's width", async ({ page }) => {
  test.slow(); // every screen, each at two widths with full-page screenshots: minutes on a slow, shared machine
  const anonymous: [string, string][] = [
    ["/", "tasks"],
    ["/signin", "signin"],
    ["/register", "register"],
    ["/tasks/sentiment", "annotate-anonymous"],
    ["/validate", "validate-anonymous"],
    ["/leaderboards", "leaderboards"],
    ["/models", "models"],
    ["/no/such/page", "not-found"],
  ];
  for (const [path, name] of anonymous) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
    await checkAccessibility(page, path);
    await screenshots(page, name);
  }
  await register(page, "axe");
  for (const [path, name] of [
    ["/", "tasks-signed-in"],
    ["/validate", "validate-tasks"],
    ["/tasks/qa", "annotate-qa-empty"],
  ] as const) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
    await checkAccessibility(page, path);
    await screenshots(page, name);
  }
});

test("GraphiQL works offline from the app's own assets", async ({ page, baseURL }) => {
  const outside: string[] = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(baseURL ?? "") || url.startsWith("ws://127.0.0.1")) return route.continue();
    outside.push(url);
    return route.abort();
  });
  await page.goto("/graphql");
  await expect(page.locator(".graphiql-container")).toBeVisible();
  await expect(page.getByText("Loading GraphiQL…")).toHaveCount(0);
  // The editors load on their own after the page: a click before the query editor holds its default query runs
  // nothing, so click again until the answer shows.
  await expect(async () => {
    await page.getByRole("button", { name: /^Execute query/ }).click();
    await expect(page.locator(".graphiql-response")).toContainText('"code": "hatespeech"', { timeout: 3_000 });
  }).toPass({ timeout: 30_000 });
  await screenshots(page, "graphiql");
  expect(outside).toEqual([]);
});

test("W1: the first load of an annotate page transfers at most 150 KB of JS and CSS", async ({ browser, baseURL }) => {
  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  const sizes: Promise<number>[] = [];
  page.on("requestfinished", (request) => {
    if (["script", "stylesheet"].includes(request.resourceType()))
      sizes.push(request.sizes().then((s) => s.responseBodySize));
  });
  const started = Date.now();
  await page.goto("/tasks/sentiment");
  await expect(page.getByRole("button", { name: "Submit" })).toBeEnabled();
  await expect(page.getByLabel("Statement")).toBeEditable();
  const interactive = Date.now() - started;
  await page.waitForLoadState("networkidle");
  const total = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  console.log(`W1 ${(total / 1024).toFixed(1)} KB of JS+CSS transferred; W2 interactive form after ${interactive} ms`);
  expect(total).toBeLessThanOrEqual(150 * 1024);
  await context.close();
});
