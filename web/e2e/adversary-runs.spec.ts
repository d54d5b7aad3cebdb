// Machine adversaries on the owner pages, against the demo's sentiment task: a budget the server refuses is named
// beside its field; a run of sentiment-templates reaches DONE within its budget, and its candidates enter the round
// as MACHINE examples, counted in the round's table by source on the leaderboard page.
import type { Page } from "@playwright/test";
import { checkAccessibility, expect, manage, screenshots, signInAsOwner, test } from "./fixtures";

/** The round shown on the sentiment leaderboard and the "Machine" row's collected count in its table by source. */
async function machineCollected(page: Page): Promise<{ round: number; collected: number }> {
  await page.goto("/leaderboards/sentiment");
  const table = page.getByRole("table", { name: /^Round \d+ by source$/ });
  await expect(table).toBeVisible();
  await expect(table.getByRole("row")).toHaveCount(4); // the header and Human, Assisted, Machine
  const caption = (await table.locator("caption").textContent()) ?? "";
  const row = table.getByRole("row", { name: /^Machine/ });
  return {
    round: Number(/Round (\d+)/.exec(caption)?.[1]),
    collected: Number(await row.getByRole("cell").first().textContent()),
  };
}

test("an owner runs a machine adversary; its candidates count as MACHINE examples of the round", async ({ page }) => {
  test.setTimeout(120_000);
  // The demo's admin (an owner of every task): the suite registers as many accounts as the server takes an hour.
  await signInAsOwner(page);
  const before = await machineCollected(page);

  await manage(page, "sentiment", "adversaries");
  const tab = page
    .getByRole("navigation", { name: "Manage the task" })
    .getByRole("link", { name: "Machine adversaries" });
  await expect(tab).toHaveAttribute("aria-current", "page");
  await expect(page.getByRole("heading", { name: "Machine adversaries", level: 2 })).toBeVisible();
  await expect(page.getByText("see where it came from only after voting")).toBeVisible();

  // The adversaries that generate for sentiment; those written for other tasks are listed, disabled, with why.
  const adversary = page.getByLabel("Adversary", { exact: true });
  await expect(adversary.locator("option", { hasText: "sentiment-templates" })).toBeEnabled();
  await expect(adversary.locator("option", { hasText: "nli-templates" })).toBeDisabled();
  await expect(adversary.locator("option", { hasText: "nli-templates" })).toContainText("written for nli");
  await adversary.selectOption("sentiment-templates");
  await expect(page.locator("#gen-adversary-hint")).toContainText("CheckList-style sentiment rewrites");
  const budget = page.getByLabel("Budget", { exact: true });
  await expect(budget).toHaveValue("50");

  // A budget the server refuses: its rule, beside the field; nothing starts.
  await budget.fill("0");
  await page.getByLabel("Seed (optional)").fill("1");
  await page.getByRole("button", { name: "Start run" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "fix the fields marked above" })).toBeVisible();
  await expect(budget).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator("#gen-budget-error")).toContainText("at least 1");
  await expect(budget).toHaveAttribute("aria-describedby", /gen-budget-error/);
  await screenshots(page, "owner-adversaries-refused");

  // A run: budget 20, seed 1. It reaches DONE within seconds, having spent at most its budget.
  await budget.fill("20");
  await page.getByRole("button", { name: "Start run" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "Started a run of sentiment-templates (seed 1)" }),
  ).toBeVisible();
  await expect(budget).not.toHaveAttribute("aria-invalid", "true");
  const table = page.getByRole("table", { name: "Generation runs of Sentiment, newest first" });
  const row = table.locator("tbody tr").first(); // newest first
  await expect(row.getByRole("rowheader")).toContainText("sentiment-templates");
  await expect(row.getByRole("rowheader")).toContainText("seed 1");
  await expect(row).toHaveAttribute("data-run-status", "DONE", { timeout: 60_000 });
  await expect(row.locator("[data-status]")).toHaveText("Done");
  await expect(row.getByRole("button", { name: /^Cancel/ })).toHaveCount(0);
  await expect(row.getByRole("cell").first()).toHaveText(String(before.round));
  const queries = Number(
    /^(\d+) of 20 target queries$/.exec((await row.locator("[data-queries]").textContent()) ?? "")?.[1],
  );
  expect(queries).toBeGreaterThan(0);
  expect(queries).toBeLessThanOrEqual(20);
  await expect(
    row.getByRole("progressbar", { name: "Target queries spent by sentiment-templates (seed 1)" }),
  ).toBeVisible();
  const candidates = Number(await row.locator("[data-candidates]").textContent());
  // The templates write from the demo's prompts alone, so some fool the target: 6 of 20 queries against a fresh demo.
  expect(candidates).toBeGreaterThanOrEqual(1);
  await expect(page.getByRole("status").filter({ hasText: "sentiment-templates (seed 1) is done" })).toContainText(
    `${candidates} candidate`,
  );
  await checkAccessibility(page, "owner machine adversaries");
  await screenshots(page, "owner-adversaries");

  // The round's table by source counts them as MACHINE examples.
  const after = await machineCollected(page);
  expect(after.round).toBe(before.round);
  expect(after.collected).toBeGreaterThan(0);
  expect(after.collected - before.collected).toBe(candidates);
});
