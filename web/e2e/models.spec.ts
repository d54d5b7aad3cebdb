// The Models screens against the demo: a model archive (a tiny randomly initialised BERT that e2e/tiny_model.py
// saves with save_pretrained and archives) uploaded through the page with its progress, evaluated with live
// progress, its results, publish / unpublish and delete; an archive the server refuses and an http model whose URL
// the outbound policy refuses, each with the server's words beside the field; accessibility and screenshots.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "@playwright/test";
import { checkAccessibility, expect, register, screenshots, test } from "./fixtures";

const PYTHON = process.env.DYNAFORGE_PYTHON ?? resolve(import.meta.dirname, "../../.venv/bin/python");
let folder = "";
let archive = "";

test.beforeAll(() => {
  if (process.env.DYNAFORGE_E2E_SKIP) return;
  folder = mkdtempSync(join(tmpdir(), "dynaforge-model-"));
  archive = join(folder, "tiny-bert.tar.gz");
  // The sentiment task's labels, in the model's id2label order.
  execFileSync(PYTHON, [resolve(import.meta.dirname, "tiny_model.py"), archive, "positive", "negative", "neutral"], {
    env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_VERBOSITY: "error" },
    stdio: ["ignore", "ignore", "inherit"],
  });
});

test.afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
});

async function openTaskModels(page: Page) {
  await page.getByRole("link", { name: "Models", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Models", level: 1 })).toBeVisible();
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Models: Sentiment", level: 1 })).toBeVisible();
}

const modelStatus = (page: Page) => page.locator("[data-model-status]");
const published = (page: Page) => page.locator("[data-published]");

test("a model archive uploaded through the page is evaluated, with live progress, then its results", async ({
  page,
}) => {
  // The demo evaluates its own models when it starts: this one may queue behind them (a few minutes on two cores).
  test.setTimeout(480_000);
  await register(page, "builder");
  await page.getByRole("link", { name: "Models", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Models", level: 1 })).toBeVisible();
  await checkAccessibility(page, "models: tasks");
  await screenshots(page, "models-tasks");
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Models: Sentiment", level: 1 })).toBeVisible();
  await expect(page.getByText("You have not submitted a model to this task yet.")).toBeVisible();
  await expect(page.getByRole("table").filter({ hasText: "minilm-sentiment" })).toBeVisible(); // the demo's, published
  await checkAccessibility(page, "models: a task's models");
  await screenshots(page, "models-task");

  // A slow uplink, so that the upload's progress is there to see.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: 40 * 1024,
  });
  const progressEvents = page.waitForEvent("websocket").then((ws) =>
    ws.waitForEvent("framereceived", {
      predicate: (frame) => /"evaluationUpdated".*"status":"(RUNNING|DONE)"/.test(String(frame.payload)),
      timeout: 420_000,
    }),
  );
  await expect(page.locator("[data-allowance]")).toHaveText(/^(\d+) of \1 submissions? left in the last 24 hours\.$/);
  await page.getByLabel("Model name").fill("tiny-bert");
  await page.getByLabel("Model archive", { exact: true }).setInputFiles(archive);
  await page.getByRole("button", { name: "Upload and submit" }).click();
  const uploading = page.getByRole("progressbar", { name: "Uploading the archive" });
  await expect(uploading).toBeVisible();
  await screenshots(page, "models-uploading");
  await expect(page.getByRole("heading", { name: "tiny-bert", level: 1 })).toBeVisible({ timeout: 60_000 });
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: -1,
  });

  // One progress bar per data set (the scoring set and its perturbed copies), moved by the subscription.
  const bars = page.getByRole("progressbar", { name: /^demo-scoring/ });
  await expect(bars.first()).toBeVisible();
  expect(await bars.count()).toBeGreaterThan(1);
  await checkAccessibility(page, "model: evaluating");
  await screenshots(page, "model-evaluating");
  await progressEvents; // the task's evaluations move over the websocket (the demo's may come first)
  await expect(page.getByRole("progressbar", { name: /: (Running|Done)$/ }).first()).toBeVisible({ timeout: 420_000 });

  // The scoring set's results appear as soon as its evaluation is done (its perturbed copies may still run).
  const metrics = page.getByRole("table", { name: "Metrics on demo-scoring" });
  await expect(metrics.getByRole("row", { name: /accuracy/ })).toBeVisible({ timeout: 420_000 });
  await expect(metrics.getByRole("row", { name: /accuracy/ })).toContainText(/\d\.\d{3} – \d\.\d{3}/); // its interval
  await expect(page.getByRole("progressbar", { name: "demo-scoring: Done" })).toBeVisible();
  await expect(page.locator("[data-evaluation-summary]")).toHaveText(/^[1-9]\d* of \d+ evaluations finished$/);
  // A scoring set's gold is secret: its submitter gets no item-by-item download of it (owners do)
  await expect(page.getByRole("button", { name: /^Download item by item/ })).toHaveCount(0);
  await checkAccessibility(page, "model: results");
  await screenshots(page, "model-results");

  // Delete it: asked first; refused in words while an evaluation runs, else gone from my models.
  await page.getByRole("button", { name: "Delete model" }).click();
  await page.getByRole("button", { name: "Keep it" }).click();
  await page.getByRole("button", { name: "Delete model" }).click();
  await page.getByRole("button", { name: "Yes, delete it" }).click();
  const refused = page.getByRole("alert").filter({ hasText: /running; delete it when they finish/ });
  const list = page.getByRole("heading", { name: "Models: Sentiment", level: 1 });
  await expect(refused.or(list)).toBeVisible();
  if (await list.isVisible())
    await expect(page.getByText("You have not submitted a model to this task yet.")).toBeVisible();
  else await expect(modelStatus(page)).toHaveText(/Evaluat/);
});

test("refusals are shown beside the field in the server's words; an http model is published, then unpublished", async ({
  page,
}) => {
  await register(page, "endpoint");
  await openTaskModels(page);

  // Not an archive: the server's archive check says why.
  await page.getByLabel("Model name").fill("not-a-model");
  await page.getByLabel("Model archive", { exact: true }).setInputFiles({
    name: "notes.tar.gz",
    mimeType: "application/gzip",
    buffer: Buffer.from("these are notes, not a model"),
  });
  await page.getByRole("button", { name: "Upload and submit" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();
  await expect(page.getByLabel("Model archive", { exact: true })).toHaveAttribute("aria-invalid", "true");
  const fileError = page.locator("#model-file-error");
  await expect(fileError).toBeVisible();
  expect((await fileError.textContent())?.length).toBeGreaterThan(10);

  // An http endpoint on a private network's address: the outbound policy refuses it (the demo, listening on
  // loopback only, takes models served on this machine, so the address is not a loopback one).
  await page.getByRole("radio", { name: "An HTTP endpoint" }).check();
  await page.getByLabel("Model name").fill("internal-endpoint");
  await page.getByLabel("Endpoint URL").fill("http://10.0.0.1:9/predict");
  await page.getByRole("button", { name: "Submit model" }).click();
  await expect(page.getByLabel("Endpoint URL")).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator("#model-url-error")).toContainText(/internal|private|loopback|not allowed|refused/i);
  await expect(page.getByRole("alert").filter({ hasText: /\w/ })).toBeVisible();
  await checkAccessibility(page, "models: refused");
  await screenshots(page, "models-refused");

  // Options that are not JSON never leave the page.
  await page.getByLabel("Options (JSON, optional)").fill("{timeout: 5");
  await page.getByRole("button", { name: "Submit model" }).click();
  await expect(page.locator("#model-options-error")).toContainText("not valid JSON");
  await page.getByLabel("Options (JSON, optional)").fill("");

  // A public address (that does not resolve here) is taken; publish, then unpublish.
  await page.getByLabel("Model name").fill("remote-endpoint");
  await page.getByLabel("Endpoint URL").fill("https://models.example.invalid/predict");
  await page.getByRole("button", { name: "Submit model" }).click();
  await expect(page.getByRole("heading", { name: "remote-endpoint", level: 1 })).toBeVisible();
  await expect(published(page)).toHaveText("Not published");
  await page.getByRole("button", { name: "Publish", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Published: it is on the leaderboard." })).toBeVisible();
  await expect(published(page)).toHaveText("Published");
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  const publishedTable = page.getByRole("region", { name: "Published models" });
  await expect(publishedTable.getByRole("link", { name: "remote-endpoint" })).toBeVisible();
  await publishedTable.getByRole("link", { name: "remote-endpoint" }).click();
  await page.getByRole("button", { name: "Unpublish" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Taken off the leaderboard." })).toBeVisible();
  await expect(published(page)).toHaveText("Not published");
  await page.getByRole("link", { name: "Sentiment", exact: true }).click();
  await expect(
    page.getByRole("region", { name: "My models" }).getByRole("link", { name: "remote-endpoint" }),
  ).toBeVisible();
  await expect(page.getByRole("region", { name: "Published models" }).getByText("remote-endpoint")).toHaveCount(0);
  await checkAccessibility(page, "models: mine and published");
  await screenshots(page, "models-mine");
});
