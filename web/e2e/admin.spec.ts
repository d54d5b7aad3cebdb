// The admin page against a real demo server: the demo admin finds a new account, makes it an admin and unmakes it,
// reads and revokes its tokens, disables it (its own browser is signed out at its next request) and enables it
// again; an ordinary account is told the page is for admins. Accessibility and screenshots of the page.
import { checkAccessibility, expect, newPerson, screenshots, signInAsOwner, test } from "./fixtures";

test("an admin finds an account, changes its role, revokes its token and disables it", async ({
  page,
  browser,
  baseURL,
}) => {
  const person = await newPerson(browser, baseURL, "managed");
  await person.page.goto("/admin");
  await expect(person.page.getByText("This page is for the platform's admins.")).toBeVisible();

  await signInAsOwner(page);
  await page.goto("/me");
  await page.getByRole("link", { name: "Run the platform's accounts" }).click();
  await expect(page.getByRole("heading", { name: "Admin", level: 1 })).toBeVisible();
  await page.getByLabel("Name or email contains").fill(person.username);
  await page.getByRole("button", { name: "Find" }).click();
  await expect(page.locator("[data-accounts-count]")).toHaveText("1 account match.");
  const row = page.locator(`[data-account="${person.username}"]`);
  await expect(row.getByRole("cell").nth(3)).toHaveText("active");

  // A role, given and taken back
  await page.getByRole("button", { name: `Make admin: ${person.username}` }).click();
  await expect(page.getByRole("status").filter({ hasText: `${person.username} is an admin now.` })).toBeVisible();
  await expect(row.getByRole("cell").nth(2)).toHaveText("admin");
  await page.getByRole("button", { name: `Remove admin rights from ${person.username}` }).click();
  await expect(row.getByRole("cell").nth(2)).toHaveText("user");

  // Its tokens: the one registering issued, listed without its secret, and revoked
  await page.getByRole("button", { name: `Show the tokens of ${person.username}` }).click();
  const tokens = page.locator(`[data-user-tokens="${person.username}"]`);
  await expect(tokens.getByRole("row")).toHaveCount(2);
  await expect(tokens.getByRole("row").nth(1)).toContainText("registration");
  await checkAccessibility(page, "admin accounts");
  await screenshots(page, "admin-accounts");
  await page.getByRole("button", { name: `Revoke the token registration of ${person.username}` }).click();
  await expect(page.getByRole("status").filter({ hasText: "Revoked “registration”." })).toBeVisible();
  await expect(tokens.getByRole("row").nth(1)).toContainText("revoked");

  // Disabled (asked first, in place), then enabled again
  await page.getByRole("button", { name: `Disable ${person.username}` }).click();
  await expect(row).toContainText("Their tokens stop signing in at once");
  await page.getByRole("button", { name: `Yes, disable ${person.username}` }).click();
  await expect(row.getByRole("cell").nth(3)).toHaveText("disabled");
  await page.getByLabel("Disabled only").check();
  await page.getByRole("button", { name: "Find" }).click();
  await expect(page.locator("[data-accounts-count]")).toHaveText("1 account match.");
  await page.getByRole("button", { name: `Enable ${person.username}` }).click();
  await expect(page.getByRole("status").filter({ hasText: `${person.username} can sign in again.` })).toBeVisible();
  // The admin cannot unmake or disable themself
  await page.getByLabel("Disabled only").uncheck();
  await page.getByLabel("Admins only").check();
  await page.getByLabel("Name or email contains").fill("demo");
  await page.getByRole("button", { name: "Find" }).click();
  await expect(page.getByRole("button", { name: "Disable demo", exact: true })).toBeDisabled();
  await person.context.close();
});
