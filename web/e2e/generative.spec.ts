// A task whose target writes, against the demo's local engine (llama.cpp serving Gemma 3 270M): the reply shows in
// the annotate form as it streams (replyStream), then the verdict by chrF against the annotator's references.
import { expect, openTask, screenshots, signInAsOwner, test, verdict } from "./fixtures";

type Watched = Window & { streamed?: string[] };

test("the translation streams into the annotate form, then chrF decides", async ({ page }) => {
  test.setTimeout(180_000); // the demo's own evaluations may hold the engine for a while
  // The demo's admin: the suite registers as many accounts as the server takes an hour.
  await signInAsOwner(page);
  await openTask(page, "translate-fr-en");
  // Everything the streamed reply showed as it grew: it may be on screen for well under a second.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as Watched).streamed = seen;
    new MutationObserver(() => {
      const shown = document.querySelector('[data-testid="streamed-reply"]')?.textContent;
      if (shown && shown !== seen.at(-1)) seen.push(shown);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.getByLabel("Source").fill("Le chat dort sur le canapé du salon.");
  await page
    .getByLabel("Translation")
    .fill("The cat is sleeping on the living room sofa.\nThe cat sleeps on the couch.");
  await page.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(page)).toContainText("The model answered:", { timeout: 150_000 });
  await expect(verdict(page)).toContainText(/You fooled the model!|The model was not fooled\./);
  const answer = (await verdict(page).locator(".prediction strong").first().textContent()) ?? "";
  const streamed = (await page.evaluate(() => (window as Watched).streamed)) ?? [];
  expect(streamed.length, "the reply showed while it was written").toBeGreaterThan(0);
  // Each view of the stream begins the next, and they all begin the reply the verdict shows (whose last pieces may
  // arrive after createExample's answer, when the stream is already closed).
  streamed.forEach((view, i) => {
    if (i > 0) expect(view.startsWith(streamed[i - 1] ?? "")).toBe(true);
  });
  expect(answer.trim().startsWith((streamed.at(-1) ?? "").trim())).toBe(true);
  await expect(verdict(page)).toContainText(/tokens; first token after \d+ ms/);
  await screenshots(page, "annotate-translation");
});
