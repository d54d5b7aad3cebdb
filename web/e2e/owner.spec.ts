// The owner pages against a real demo server, signed in with the demo token (an admin, so an owner of every task):
// rounds (close and open the next, seen on the annotate page), contexts (upload, list, edit, retire), a flagged
// example with its reason, data sets from a round and from a file, an export downloaded with the token in a header,
// webhooks, settings; accessibility and screenshots of every owner screen.
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "@playwright/test";
import {
  checkAccessibility,
  expect,
  gql,
  manage,
  newPerson,
  openTask,
  screenshots,
  sessionToken,
  signInAsOwner,
  test,
  verdict,
} from "./fixtures";

const roundHeading = (page: Page) =>
  page.getByRole("complementary", { name: "Round" }).getByRole("heading", { name: /^Round \d+$/ });

test("an owner closes the round and opens the next; the annotate page shows it", async ({ page }) => {
  await signInAsOwner(page);
  await openTask(page, "hatespeech");
  const before = Number((await roundHeading(page).textContent())?.replace(/\D+/g, ""));
  await page.getByRole("link", { name: "Manage this task" }).click();
  await expect(page.getByRole("heading", { name: "Rounds", level: 2 })).toBeVisible();
  const targets = page.getByRole("table", { name: `Target models of round ${before}` });
  await expect(targets.getByRole("row")).not.toHaveCount(1);
  // Each target says where it came from in the task's model registry.
  await expect(targets.locator("[data-lineage]").first()).toHaveText(
    /^(shipped with the task's plugin|configured|trained by an operator|trained on the platform)/,
  );
  await expect(page.getByRole("group", { name: "Play against" }).getByRole("checkbox").first()).toBeChecked();
  await checkAccessibility(page, "owner rounds");
  await screenshots(page, "owner-rounds");

  // Closing and opening rounds ask first, in place: kept, nothing changes.
  await page.getByRole("button", { name: `Close round ${before}` }).click();
  await expect(page.getByText("Annotators cannot write examples until a next round opens.")).toBeVisible();
  await page.getByRole("button", { name: "Keep it" }).click();
  await expect(page.getByRole("heading", { name: `Round ${before} (open)` })).toBeVisible();
  await page.getByRole("button", { name: `Close round ${before}` }).click();
  await page.getByRole("button", { name: `Yes, close round ${before}` }).click();
  await expect(page.getByRole("status").filter({ hasText: `Round ${before} is closed.` })).toBeVisible();
  await page.getByRole("button", { name: `Open round ${before + 1}` }).click();
  await expect(page.getByText(`Round ${before + 1} opens. This cannot be undone.`)).toBeVisible();
  await page.getByRole("button", { name: `Yes, open round ${before + 1}` }).click();
  await expect(page.getByRole("status").filter({ hasText: `Round ${before + 1} is open.` })).toBeVisible();
  await expect(page.getByRole("heading", { name: `Round ${before + 1} (open)` })).toBeVisible();

  await page.getByRole("link", { name: /^Write examples for / }).click();
  await expect(roundHeading(page)).toHaveText(`Round ${before + 1}`);

  // A model id that names nothing is refused in words, beside the field.
  await manage(page, "hatespeech", "rounds");
  await page.getByLabel("Model id").fill("no-such-model");
  await page.getByRole("button", { name: "Add model" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "No model with the id no-such-model" })).toBeVisible();
});

test("an owner uploads contexts, sees them listed, edits and retires one", async ({ page }) => {
  await signInAsOwner(page);
  await manage(page, "nli", "contexts");
  const stamp = Date.now().toString(36);
  const premises = [0, 1, 2].map((i) => `Uploaded premise ${stamp} number ${i}: a cat sat on the warm mat.`);
  const [p0 = "", p1 = "", p2 = ""] = premises;

  // A wrong row adds none and is named by line.
  await page.getByLabel("Contexts file").setInputFiles({
    name: "bad.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from(`${JSON.stringify({ premise: p0 })}\n${JSON.stringify({ nothing: 1 })}\n`),
  });
  await page.getByRole("button", { name: "Upload contexts" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /line 2/ })).toBeVisible();

  await page.getByLabel("Contexts file").setInputFiles({
    name: "premises.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from(premises.map((premise) => JSON.stringify({ premise })).join("\n")),
  });
  await page.getByLabel("Tag (optional)").fill(`batch-${stamp}`);
  await page.getByRole("button", { name: "Upload contexts" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Added 3 contexts from premises.jsonl" })).toBeVisible();
  const list = page.getByRole("list", { name: /^Contexts of round/ });
  for (const premise of premises) await expect(list).toContainText(premise);
  await checkAccessibility(page, "owner contexts");
  await screenshots(page, "owner-contexts");

  await page.getByRole("button", { name: new RegExp(`^Edit context: Uploaded premise ${stamp} number 0`) }).click();
  await page
    .getByRole("textbox", { name: "Premise", exact: true })
    .fill(`Edited premise ${stamp}: a dog slept under the old table.`);
  await page.getByRole("button", { name: "Save context" }).click();
  await expect(list).toContainText(`Edited premise ${stamp}`);
  await expect(list).not.toContainText(p0);

  // Retiring is asked twice.
  await page.getByRole("button", { name: new RegExp(`^Retire context: Uploaded premise ${stamp} number 1`) }).click();
  await page.getByRole("button", { name: "Yes, retire it" }).click();
  await expect(list).not.toContainText(p1);
  await expect(list).toContainText(p2);
});

test("a flagged example reaches the owner, who accepts it, makes data sets of the round and exports it", async ({
  page,
  browser,
  baseURL,
}) => {
  test.setTimeout(120_000);
  const statement = `Owner check ${Date.now()}: people from every town are welcome at our table.`;
  const writer = await newPerson(browser, baseURL, "flagw");
  await openTask(writer.page, "hatespeech");
  await writer.page.getByLabel("Statement").fill(statement);
  // A friendly statement labelled hateful fools the model, so it goes to the validators.
  await writer.page.getByRole("radio", { name: "hateful", exact: true }).check();
  await writer.page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(writer.page)).toContainText("You fooled the model!");
  await writer.context.close();

  // Another person flags it from the validation queue (skipping anything else there).
  const flagger = await newPerson(browser, baseURL, "flagv");
  await flagger.page.goto("/validate/hatespeech");
  // Its content warning comes first: the examples show once it is accepted.
  await expect(flagger.page.getByRole("note", { name: "Content warning" })).toBeVisible();
  await expect(flagger.page.getByRole("article", { name: "Example to validate" })).toHaveCount(0);
  await flagger.page.getByRole("button", { name: "I understand: show the examples" }).click();
  await expect(flagger.page.getByRole("note", { name: "Content warning" })).toHaveCount(0);
  for (let n = 0; ; n++) {
    expect(n, "the example reached the validation queue").toBeLessThan(30);
    await expect(flagger.page.getByRole("button", { name: "Skip" })).toBeVisible();
    const item = flagger.page.getByRole("article", { name: "Example to validate" });
    if (await item.getByText(statement).isVisible()) break;
    const shown = (await item.textContent()) ?? "";
    await flagger.page.getByRole("button", { name: "Skip" }).click();
    await expect(item).not.toHaveText(shown);
  }
  await flagger.page.getByRole("button", { name: "Flag" }).click();
  await flagger.page.getByLabel("Reason").fill("It reads like spam, not a real statement.");
  await flagger.page.getByRole("button", { name: "Send flag" }).click();
  await expect(flagger.page.getByText("Flagged for the task's owners.")).toBeVisible();
  await flagger.context.close();

  await signInAsOwner(page);
  await manage(page, "hatespeech", "flagged");
  const item = page.getByRole("listitem").filter({ hasText: statement });
  await expect(item).toContainText("It reads like spam, not a real statement.");
  await checkAccessibility(page, "owner flagged");
  await screenshots(page, "owner-flagged");
  await item.getByRole("button", { name: "Accept" }).click();
  await expect(page.getByRole("listitem").filter({ hasText: statement })).toHaveCount(0);

  // Data sets from the round it was written in (the current one): its one accepted example makes the train set;
  // empty dev and test splits are not made.
  await page.getByRole("link", { name: "Data sets", exact: true }).click();
  const round = await page.getByLabel("Round", { exact: true }).inputValue();
  await page.getByRole("button", { name: "Create data sets" }).click();
  await expect(page.getByRole("status").filter({ hasText: `Created r${round}-train.` })).toBeVisible();
  const sets = page.getByRole("table", { name: /^Data sets of/ });
  await expect(sets).toContainText(`r${round}-train`);
  await checkAccessibility(page, "owner data sets");
  await screenshots(page, "owner-datasets");

  // The round's export, fetched with the token in a header and saved from a blob.
  await page.getByRole("link", { name: "Exports", exact: true }).click();
  const exportRequest = page.waitForRequest((r) => r.url().includes("/export/hatespeech"));
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download export" }).click();
  const request = await exportRequest;
  expect(request.url()).not.toContain("dfk_");
  expect(await request.headerValue("authorization")).toMatch(/^Bearer /);
  const file = await (await download).path();
  const jsonl = readFileSync(file, "utf8");
  expect(jsonl).toContain(statement);
  await expect(page.getByRole("status").filter({ hasText: /^Downloaded / })).toBeVisible();
  await checkAccessibility(page, "owner exports");
  await screenshots(page, "owner-exports");

  // The export imported back as a data set.
  await page.getByRole("link", { name: "Data sets", exact: true }).click();
  const name = `imported-${Date.now().toString(36)}`;
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Access", { exact: true }).selectOption("STANDARD");
  await page.getByLabel("Examples file").setInputFiles({
    name: "export.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from(jsonl),
  });
  await page.getByRole("button", { name: "Import data set" }).click();
  await expect(page.getByRole("status").filter({ hasText: `Imported ${name}` })).toBeVisible();
  await expect(sets).toContainText(name);

  // Its access changed, then the set deleted (asked twice).
  const row = sets.getByRole("row").filter({ hasText: name });
  await row.getByLabel(`Access of ${name}`).selectOption("HIDDEN");
  await expect(row.getByRole("status")).toHaveText(`${name} is now hidden, its copies with it.`);
  await expect(row.locator("[data-access]")).toHaveText("hidden");
  await row.getByRole("button", { name: `Delete ${name}` }).click();
  await row.getByRole("button", { name: `Yes, delete ${name}` }).click();
  await expect(sets).not.toContainText(name);
  await checkAccessibility(page, "owner data sets after a delete");
});

test("an owner creates a webhook, rotates its secret and deletes it", async ({ page }) => {
  await signInAsOwner(page);
  await manage(page, "sentiment", "webhooks");
  const url = `https://hooks.example.org/dynaforge-${Date.now().toString(36)}`;

  await page.getByLabel("URL").fill("ftp://hooks.example.org/no");
  await page.getByRole("button", { name: "Create webhook" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();
  await expect(page.getByLabel("URL")).toHaveAttribute("aria-invalid", "true");

  await page.getByLabel("URL").fill(url);
  await page.getByLabel("A round opened, closed or changed").check();
  await page.getByLabel("Note (optional)").fill("the team's dashboard");
  await page.getByRole("button", { name: "Create webhook" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Signing secret" })).toContainText("whsec_");
  const first = await page.getByRole("status").filter({ hasText: "Signing secret" }).locator("code").textContent();
  const hooks = page.getByRole("list", { name: /^Registered webhooks/ });
  const row = hooks.getByRole("listitem").filter({ hasText: url });
  await expect(row).toContainText("model fooled, round changed");
  await row.getByText(/^Deliveries/).click();
  await checkAccessibility(page, "owner webhooks");
  await screenshots(page, "owner-webhooks");

  await row.getByRole("button", { name: `Rotate the secret of ${url}` }).click();
  const second = row.getByRole("status").filter({ hasText: "Signing secret" }).locator("code");
  await expect(second).toContainText("whsec_");
  expect(await second.textContent()).not.toEqual(first);

  await row.getByRole("button", { name: `Pause ${url}` }).click();
  await expect(row).toContainText("(paused)");
  // Delete is asked twice: "Keep it" keeps it.
  await row.getByRole("button", { name: `Delete ${url}` }).click();
  await row.getByRole("button", { name: "Keep it" }).click();
  await expect(row).toBeVisible();
  await row.getByRole("button", { name: `Delete ${url}` }).click();
  await row.getByRole("button", { name: "Yes, delete it and its delivery log" }).click();
  await expect(hooks.getByRole("listitem").filter({ hasText: url })).toHaveCount(0);
});

test("a webhook's delivery is sent again from its row", async ({ page, request }) => {
  // A receiver on loopback (the demo allows 127.0.0.1 as an outbound address): it answers 204 and keeps what came.
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => receiver.listen(0, "127.0.0.1", done));
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook-${Date.now().toString(36)}`;
    await signInAsOwner(page);
    await manage(page, "sentiment", "webhooks");
    await page.getByLabel("URL").fill(url);
    await page.getByLabel("An example was written").check();
    await page.getByRole("button", { name: "Create webhook" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Signing secret" })).toContainText("whsec_");

    // An example written for the task is delivered once.
    const statement = `A webhook test statement, ${Date.now().toString(36)}: a warm and funny film.`;
    const created = await gql<{ createExample: { __typename: string } }>(
      request,
      await sessionToken(page),
      `mutation ($input: CreateExampleInput!) { createExample(input: $input) { __typename } }`,
      { input: { taskCode: "sentiment", fields: { statement, label: "positive" } } },
    );
    expect(created.createExample.__typename).toBe("ExampleCreated");
    const ours = () => received.filter((r) => r.body.includes(statement));
    await expect.poll(() => ours().length, { timeout: 30_000 }).toBe(1);

    // Its row says it was delivered (read again until the delivery is recorded); Send again queues it once more,
    // and the receiver gets the same delivery a second time.
    const row = page
      .getByRole("list", { name: /^Registered webhooks/ })
      .getByRole("listitem")
      .filter({ hasText: url });
    const delivered = row.getByRole("row").filter({ hasText: "example created" }).filter({ hasText: "delivered" });
    await expect(async () => {
      await page.reload();
      await row.getByText(/^Deliveries/).click();
      await expect(delivered).toHaveCount(1, { timeout: 2_000 });
    }).toPass({ timeout: 30_000 });
    await delivered.getByRole("button", { name: /^Send the example created delivery of .* again$/ }).click();
    await expect(
      row.getByRole("status").filter({ hasText: "The example created delivery is queued again." }),
    ).toBeVisible();
    await expect.poll(() => ours().length, { timeout: 30_000 }).toBe(2);
    const [first, again] = ours();
    // The same message (Standard Webhooks: one webhook-id, so a receiver that saw it can tell), signed afresh.
    expect(again?.body).toEqual(first?.body);
    expect(again?.headers["webhook-id"]).toEqual(first?.headers["webhook-id"]);
    expect(again?.headers["webhook-signature"]).toMatch(/^v1,/);
    await checkAccessibility(page, "owner webhooks after a redelivery");

    await row.getByRole("button", { name: `Delete ${url}` }).click();
    await row.getByRole("button", { name: "Yes, delete it and its delivery log" }).click();
    await expect(row).toHaveCount(0);
  } finally {
    receiver.close();
  }
});

test("an owner changes the task's settings", async ({ page }) => {
  await signInAsOwner(page);
  await manage(page, "hatespeech", "settings");
  const instructions = await page.getByLabel("Instructions").inputValue();
  await page.getByLabel("Validation quorum").fill("0");
  await page.getByRole("button", { name: "Save settings" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /quorum/i })).toBeVisible();
  await page.getByLabel("Validation quorum").fill("3");
  await page.getByLabel("Instructions").fill(`${instructions}\nBe kind.`);
  await page.getByRole("button", { name: "Save settings" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Settings saved." })).toBeVisible();
  await checkAccessibility(page, "owner settings");
  await screenshots(page, "owner-settings");
  await openTask(page, "hatespeech");
  await expect(page.getByText("Be kind.")).toBeVisible();
});

test("people who do not own a task see no owner pages", async ({ page, browser, baseURL }) => {
  const person = await newPerson(browser, baseURL, "notowner");
  await expect(person.page.getByRole("link", { name: /^Manage/ })).toHaveCount(0);
  await openTask(person.page, "nli");
  await expect(person.page.getByRole("link", { name: "Manage this task" })).toHaveCount(0);
  await person.page.goto("/tasks/nli/manage/settings");
  await expect(person.page.getByText("Only the owners of the task")).toBeVisible();
  await checkAccessibility(person.page, "owner pages, not an owner");
  await person.context.close();
  await signInAsOwner(page);
  await expect(page.getByRole("link", { name: "Manage Sentiment" })).toBeVisible();
});

test("an owner reads the validators' agreement and excludes one", async ({ page, request }) => {
  const register = async (prefix: string) => {
    const username = `${prefix}${Date.now().toString(36)}`;
    const data = await gql<{ register: { token: string; user: { id: string } } }>(
      request,
      null,
      `mutation ($u: String!, $e: String!) { register(input: {username: $u, email: $e,
         password: "a long enough password"}) { ... on AuthPayload { token user { id } } } }`,
      { u: username, e: `${username}@example.org` },
    );
    return { username, token: data.register.token };
  };
  // A friendly statement labelled hateful fools the model; two validators disagree on it.
  const writer = await register("qualw");
  const written = await gql<{ createExample: { example: { id: string } } }>(
    request,
    writer.token,
    `mutation ($s: String!) { createExample(input: {taskCode: "hatespeech", fields: {statement: $s,
       label: "hateful"}}) { ... on ExampleCreated { example { id } } } }`,
    { s: `Validator check ${Date.now()}: our neighbours brought soup for the whole street.` },
  );
  const agreeing = await register("qualc");
  const excluded = await register("quali");
  for (const [voter, label] of [
    [agreeing, "CORRECT"],
    [excluded, "INCORRECT"],
  ] as const) {
    const voted = await gql<{ validateExample: { __typename: string } }>(
      request,
      voter.token,
      `mutation ($id: ID!, $l: ValidationLabel!) { validateExample(input: {id: $id, label: $l, timeTakenMs: 4200}) {
         __typename } }`,
      { id: written.createExample.example.id, l: label },
    );
    expect(voted.validateExample.__typename).toBe("ValidationRecorded");
  }

  await signInAsOwner(page);
  await manage(page, "hatespeech", "validators");
  await expect(page.getByRole("heading", { name: "Validators", level: 2 })).toBeVisible();
  await expect(page.locator("[data-alpha]")).toContainText("Agreement among validators");
  const table = page.getByRole("table", { name: /^Validators of/ });
  const row = table.getByRole("row").filter({ hasText: excluded.username });
  await expect(row).toContainText("4.2 s");
  await expect(row.getByLabel(`Weight of ${excluded.username}`)).toHaveValue("1");
  await checkAccessibility(page, "owner validators");
  await screenshots(page, "owner-validators");

  await row.getByLabel(`Weight of ${excluded.username}`).fill("0");
  await row.getByRole("button", { name: "Set" }).click();
  await expect(page.getByRole("status").filter({ hasText: `${excluded.username} is excluded.` })).toBeVisible();
  await expect(row).toContainText("excluded");
  // The excluded validator's queue is empty now, and says nothing is waiting.
  const size = await gql<{ task: { validationQueueSize: number } }>(
    request,
    excluded.token,
    '{ task(code: "hatespeech") { validationQueueSize } }',
  );
  expect(size.task.validationQueueSize).toBe(0);
});

test("an owner turns on near-duplicate checks; a writer meets one and sends it anyway; the owner sees the group", async ({
  page,
  browser,
  baseURL,
  request,
}) => {
  test.setTimeout(120_000);
  const praise = "I absolutely love this wonderful film; the acting is brilliant and the music is a delight.";
  await signInAsOwner(page);
  const token = await sessionToken(page);
  try {
    await manage(page, "sentiment", "settings");
    await page.getByLabel("Near-duplicate similarity (%)").fill("70");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Settings saved." })).toBeVisible();

    const writer = await newPerson(browser, baseURL, "nearw");
    await openTask(writer.page, "sentiment");
    const stamp = Date.now().toString(36);
    await writer.page.getByLabel("Statement").fill(`${praise} Seen ${stamp}.`);
    await writer.page.getByRole("radio", { name: "negative", exact: true }).check();
    await writer.page.getByRole("button", { name: "Submit" }).click();
    await expect(verdict(writer.page)).toContainText("You fooled the model!");
    // The same praise with one word changed: shown to its writer before it counts, nothing stored.
    await writer.page.getByLabel("Statement").fill(`${praise} Watched ${stamp}.`);
    await writer.page.getByRole("button", { name: "Submit" }).click();
    const notice = writer.page.getByRole("alert").filter({ hasText: "Close to an earlier example" });
    await expect(notice).toContainText("your example");
    await expect(verdict(writer.page)).toHaveCount(0);
    await checkAccessibility(writer.page, "annotate near-copy");
    await screenshots(writer.page, "annotate-near-copy");
    await notice.getByRole("button", { name: "Send it anyway" }).click();
    await expect(verdict(writer.page)).toContainText("You fooled the model!");
    await expect(notice).toHaveCount(0);
    await writer.context.close();

    await manage(page, "sentiment", "flagged");
    const groups = page.getByRole("list", { name: "Near-duplicate groups" });
    await expect(groups).toContainText(`Watched ${stamp}`);
    await expect(groups).toContainText("2 examples");
    await checkAccessibility(page, "owner flagged with near-duplicates");
    await screenshots(page, "owner-near-duplicates");
  } finally {
    await gql(
      request,
      token,
      'mutation { updateTaskSettings(input: {taskCode: "sentiment", nearDuplicateThreshold: 0}) { __typename } }',
    );
  }
});

test("an owner reads a round's analytics and downloads them as CSV", async ({ page, browser, baseURL }) => {
  // Someone writes in the round first, so that it has something to show.
  const writer = await newPerson(browser, baseURL, "statw");
  await openTask(writer.page, "sentiment");
  await writer.page.getByLabel("Statement").fill(`Analytics check ${Date.now()}: a calm and pleasant afternoon.`);
  await writer.page.getByRole("radio", { name: "positive", exact: true }).check();
  await writer.page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(writer.page)).toContainText(/model/);
  await writer.context.close();

  await signInAsOwner(page);
  await manage(page, "sentiment", "analytics");
  await expect(page.getByRole("heading", { name: "Analytics", level: 2 })).toBeVisible();
  await expect(page.getByRole("img", { name: /^Collected \d+, fooled \d+, verified fooling \d+ over/ })).toBeVisible();
  const annotators = page.getByRole("table", { name: /^Annotators of round/ });
  await expect(annotators.getByRole("row").filter({ hasText: writer.username })).toBeVisible();
  await expect(page.getByRole("table", { name: /by where its examples came from/ })).toContainText("Human");
  await checkAccessibility(page, "owner analytics");
  await screenshots(page, "owner-analytics");

  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download the annotators (CSV)" }).click();
  const csv = readFileSync(await (await download).path(), "utf8");
  expect(csv.split("\n")[0]).toBe(
    "username,collected,fooled,verified_fooled,vmer,median_time_taken_ms,validations,validation_agreement",
  );
  expect(csv).toContain(`${writer.username},1,`);
  await page.getByLabel("Per", { exact: true }).selectOption("DAY");
  await expect(page.getByRole("img", { name: / over \d+ days?$/ })).toBeVisible();
});

test("a tutorial blocks a new annotator until passed", async ({ page, browser, baseURL, request }) => {
  test.setTimeout(150_000);
  await signInAsOwner(page);
  const token = await sessionToken(page);
  // A decided example to practise on: written by someone, accepted by the owner's vote.
  const author = await gql<{ register: { token: string } }>(
    request,
    null,
    `mutation ($u: String!) { register(input: {username: $u, email: "${Date.now()}t@example.org",
       password: "a long enough password"}) { ... on AuthPayload { token } } }`,
    { u: `tuta${Date.now().toString(36)}` },
  );
  const text = `Tutorial check ${Date.now()}: what a wonderful, joyful evening with friends.`;
  const written = await gql<{ createExample: { example: { id: string } } }>(
    request,
    author.register.token,
    `mutation ($s: String!) { createExample(input: {taskCode: "sentiment", fields: {statement: $s,
       label: "positive"}}) { ... on ExampleCreated { example { id } } } }`,
    { s: text },
  );
  await gql(
    request,
    token,
    `mutation ($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename } }`,
    { id: written.createExample.example.id },
  );
  try {
    await manage(page, "sentiment", "tutorial");
    const candidate = page
      .getByRole("list", { name: "Decided examples" })
      .getByRole("listitem")
      .filter({ hasText: text });
    await candidate.getByLabel("Why its label is right").fill("It praises the evening without a doubt.");
    await candidate.getByRole("button", { name: "Add to the tutorial" }).click();
    await expect(page.getByRole("list", { name: "Tutorial examples" })).toContainText(text);
    await page.getByLabel("Pass mark (%)").fill("100");
    await page.getByRole("button", { name: "Save the pass mark" }).click();
    await expect(page.getByRole("status").filter({ hasText: "People now need 100%" })).toBeVisible();
    await checkAccessibility(page, "owner tutorial");
    await screenshots(page, "owner-tutorial");

    // A newcomer meets the tutorial instead of the form; a wrong answer fails the attempt, a right one passes.
    const trainee = await newPerson(browser, baseURL, "trainee");
    await trainee.page.goto("/tasks/sentiment");
    const tutorial = trainee.page.getByRole("region", { name: "Tutorial" });
    await expect(tutorial).toContainText(text);
    await expect(trainee.page.getByRole("button", { name: "Submit" })).toHaveCount(0);
    await checkAccessibility(trainee.page, "tutorial");
    await screenshots(trainee.page, "tutorial");
    await tutorial.getByRole("button", { name: "The label is wrong" }).click();
    await expect(tutorial).toContainText("Not quite.");
    await expect(tutorial).toContainText("It praises the evening without a doubt.");
    await tutorial.getByRole("button", { name: "Try again" }).click();
    await tutorial.getByRole("button", { name: "The label is right" }).click();
    await expect(tutorial).toContainText("Right.");
    await tutorial.getByRole("button", { name: "Start to write examples" }).click();
    await expect(trainee.page.getByRole("button", { name: "Submit" })).toBeVisible();
    await trainee.context.close();
  } finally {
    await gql(
      request,
      token,
      'mutation { updateTaskSettings(input: {taskCode: "sentiment", qualificationPassMark: 0}) { __typename } }',
    );
    await gql(request, token, "mutation ($id: ID!) { removeTutorialItem(input: {exampleId: $id}) { __typename } }", {
      id: written.createExample.example.id,
    });
  }
});
