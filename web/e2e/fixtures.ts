// Shared fixtures: the demo server's URL as baseURL, a guard that fails any test whose pages broke the
// Content-Security-Policy or logged an error, and helpers that act as a person would.

import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { type APIRequestContext, type Browser, test as base, expect, type Page } from "@playwright/test";

export const SCREENSHOTS = resolve(import.meta.dirname, "..", "e2e-screenshots");

// biome-ignore lint/suspicious/noConfusingVoidType: Playwright types a fixture that yields nothing as void
export const test = base.extend<{ guard: void }>({
  baseURL: async ({}, use) => {
    test.skip(Boolean(process.env.DYNAFORGE_E2E_SKIP), process.env.DYNAFORGE_E2E_SKIP);
    await use(process.env.DYNAFORGE_E2E_URL);
  },
  guard: [
    async ({ context }, use) => {
      const problems: string[] = [];
      context.on("console", (message) => {
        const text = message.text();
        if (/Content Security Policy|Refused to/i.test(text)) problems.push(`CSP: ${text}`);
        else if (message.type() === "error" && !/status of 4\d\d/.test(text)) problems.push(`console: ${text}`);
      });
      context.on("weberror", (error) => problems.push(`page error: ${error.error().message}`));
      await use();
      expect(problems, "the pages broke the CSP or logged errors").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

let counter = 0;
/** A username no earlier run of the suite used (the demo's database is new each run, but runs may share one). */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** Registers a new account through the Register screen; the page ends signed in on the Tasks screen. */
export async function register(page: Page, prefix: string): Promise<string> {
  const username = uniqueName(prefix);
  await page.goto("/");
  await page.getByRole("link", { name: "Register", exact: true }).click();
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Email").fill(`${username}@example.org`);
  await page.getByLabel("Password").fill("a long enough password");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
  await expect(page.getByRole("heading", { name: "Tasks", level: 1 })).toBeVisible();
  return username;
}

/** A new signed-in page in a browser context of its own (another person). */
export async function newPerson(browser: Browser, baseURL: string | undefined, prefix: string) {
  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  const username = await register(page, prefix);
  return { context, page, username };
}

/** Accepts the task's content warning when the page shows one (hate speech, red-teaming). */
export async function acceptContentWarning(page: Page) {
  const accept = page.getByRole("button", { name: "I understand: show the examples" });
  if (await accept.isVisible()) await accept.click();
}

/** Opens a task's annotate screen, accepts its content warning, and waits until its form can be used. */
export async function openTask(page: Page, code: string) {
  await page.goto(`/tasks/${code}`);
  await expect(page.getByRole("button", { name: "Submit" })).toBeEnabled();
  await acceptContentWarning(page);
  for (const context of await page.locator("[data-context-field]").all())
    await expect(context).not.toHaveText("Loading…");
}

/** The verdict region (role status) of the annotate screen. */
export const verdict = (page: Page) => page.getByRole("status").filter({ hasText: /model/ });

/** axe-core on the page as it is: no serious or critical violation. */
export async function checkAccessibility(page: Page, what: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
    `accessibility of ${what}`,
  ).toEqual([]);
}

/** A full-page screenshot of the screen at a phone's and a laptop's width, under e2e-screenshots/. */
export async function screenshots(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: resolve(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Signs in as the demo's admin with its password (a session of its own: another test signing out with the demo
 * token revokes that token), or with the demo token when the password is unknown. */
export async function signInAsOwner(page: Page) {
  await page.goto("/signin");
  const password = process.env.DYNAFORGE_E2E_PASSWORD;
  if (password) {
    await page.getByLabel("Username").fill("demo");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
  } else {
    await page.getByLabel("API token").fill(process.env.DYNAFORGE_E2E_TOKEN ?? "");
    await page.getByRole("button", { name: "Use token" }).click();
  }
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
}

/** Opens one section of a task's owner pages. */
export async function manage(page: Page, code: string, section: string) {
  await page.goto(`/tasks/${code}/manage/${section}`);
  await expect(page.getByRole("heading", { level: 1, name: /^Manage / })).toBeVisible();
}

/** A GraphQL request to the demo server (with the token, when given), its data; fails the test on any error. */
export async function gql<T>(
  request: APIRequestContext,
  token: string | null,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const response = await request.post("/graphql", {
    data: { query, variables },
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const body = (await response.json()) as { data: T; errors?: { message: string }[] };
  expect(body.errors ?? [], JSON.stringify(body.errors)).toEqual([]);
  return body.data;
}

/** The token of the page's session (signed in with the admin's password: a token of its own). */
export async function sessionToken(page: Page): Promise<string> {
  const raw = await page.evaluate(() => sessionStorage.getItem("dynaforge.session"));
  return (JSON.parse(raw ?? "{}") as { token: string }).token;
}
