// A crowd study on Prolific, end to end: the owner creates it and copies its link; a participant arrives from the
// link (with Prolific's parameters), is signed in to a pseudonymous account without the token ever being in a URL,
// writes an example, and gets the completion code; the owner sees their work, time and pay and downloads the bonus
// file.
import { readFileSync } from "node:fs";
import {
  checkAccessibility,
  expect,
  gql,
  manage,
  screenshots,
  sessionToken,
  signInAsOwner,
  test,
  verdict,
} from "./fixtures";

const STATEMENT = "I absolutely love this wonderful film; the acting is brilliant and the music is a delight.";

test("a Prolific participant goes from the study link to the completion code", async ({
  page,
  browser,
  baseURL,
  request,
}) => {
  test.setTimeout(150_000);
  const study = `st${Date.now().toString(36)}`;
  const code = `C${Date.now().toString(36).toUpperCase()}`;
  await signInAsOwner(page);
  await manage(page, "sentiment", "crowd");
  await expect(page.getByRole("heading", { name: "Crowd studies", level: 2 })).toBeVisible();
  await page.getByLabel("The platform's study id").fill(study);
  await page.getByLabel("Name shown to participants").fill(`Fool the sentiment model (${study})`);
  await page.getByLabel("Completion code").fill(code);
  await page.getByLabel("Per accepted fooling example").fill("0.50");
  await page.getByLabel("Minimum examples").fill("1");
  await page.getByRole("button", { name: "Create the study" }).click();
  await expect(page.getByRole("status").filter({ hasText: "is open: paste its link" })).toBeVisible();
  const card = page.getByRole("article").filter({ hasText: study });
  const link = await card.getByLabel("Study URL to paste into the platform").inputValue();
  expect(link).toBe(
    `${baseURL}/crowd/prolific/${study}?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}`,
  );

  // Prolific fills in its placeholders and sends the participant, who has no account here.
  const pid = `60f0${Date.now().toString(16)}`;
  const arrival = link
    .replace("{{%PROLIFIC_PID%}}", pid)
    .replace("{{%STUDY_ID%}}", study)
    .replace("{{%SESSION_ID%}}", "s1a2b3");
  const context = await browser.newContext({ baseURL });
  const participant = await context.newPage();
  await participant.goto(arrival);
  await expect(
    participant.getByRole("heading", { name: `Fool the sentiment model (${study})`, level: 1 }),
  ).toBeVisible();
  // Signed in: the parameters left the address bar, and the token is in the tab's storage only.
  expect(participant.url()).toBe(`${baseURL}/crowd/prolific/${study}`);
  const token = await sessionToken(participant);
  expect(token).toMatch(/^dfk_/);
  expect(participant.url()).not.toContain(token);
  await expect(participant.getByRole("link", { name: "Study" })).toBeVisible();
  await expect(participant.getByText(/You take part through Prolific as prolific-[0-9a-f]{8}/)).toBeVisible();
  await expect(participant.getByText("£0.50 for each example that fools the model")).toBeVisible();
  await checkAccessibility(participant, "crowd study, arrived");
  await screenshots(participant, "crowd-study");

  // Finishing early says what is left.
  await participant.getByRole("button", { name: "Finish and get my completion code" }).click();
  await expect(participant.getByRole("alert")).toContainText("write 1 more example(s) first");

  await participant.getByRole("link", { name: "Write examples" }).click();
  await participant.getByLabel("Statement").fill(`${STATEMENT} (${study})`);
  await participant.getByRole("radio", { name: "negative", exact: true }).check();
  await participant.getByRole("button", { name: "Submit" }).click();
  await expect(verdict(participant)).toContainText("You fooled the model!");

  await participant.getByRole("link", { name: "Study" }).click();
  const work = participant.locator(".crowd-work");
  await expect(work).toContainText("Examples written1 of 1");
  await participant.getByRole("button", { name: "Finish and get my completion code" }).click();
  const done = participant.getByRole("status").filter({ hasText: "Your completion code is" });
  await expect(done).toContainText(code);
  await expect(participant.getByRole("link", { name: "Back to Prolific" })).toHaveAttribute(
    "href",
    `https://app.prolific.com/submissions/complete?cc=${code}`,
  );
  await checkAccessibility(participant, "crowd study, completed");
  await screenshots(participant, "crowd-study-completed");
  await context.close();

  // The owner accepts the example: the participant earned a bonus, in the table and in the bonus file.
  const owner = await sessionToken(page);
  const mine = await gql<{ examples: { nodes: { id: string; fields: { statement: string } }[] } }>(
    request,
    owner,
    `query { examples(taskCode: "sentiment", first: 20) { nodes { id fields } } }`,
  );
  const written = mine.examples.nodes.find((e) => e.fields.statement.includes(study));
  expect(written).toBeDefined();
  await gql(
    request,
    owner,
    "mutation ($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename } }",
    {
      id: written?.id,
    },
  );
  await page.reload();
  const row = card.getByRole("row").filter({ hasText: pid });
  await expect(row).toContainText("1 fooled · 1 accepted");
  await expect(row).toContainText("£0.50");
  await expect(card.getByRole("table")).toHaveAccessibleName(/£0\.50 earned, £0\.50 owed/);
  await checkAccessibility(page, "owner crowd studies");
  await screenshots(page, "owner-crowd");
  const download = page.waitForEvent("download");
  await card.getByRole("button", { name: "Download the bonus file" }).click();
  expect(readFileSync(await (await download).path(), "utf8")).toBe(`${pid},0.50\n`);
  // Paid on Prolific by hand: recorded here, so that it is not owed (or paid) again.
  await card.getByLabel("Paid on the platform as").fill("bulk-by-hand-1");
  await card.getByRole("button", { name: "Record the file as paid" }).click();
  await expect(card.getByRole("status")).toHaveText("Recorded £0.50 paid to 1 participant(s).");
  await expect(card.getByRole("table")).toHaveAccessibleName(/£0\.50 earned, £0\.00 owed/);
  // Closing asks first; the study then takes nobody new.
  await card.getByRole("button", { name: `Close Fool the sentiment model (${study})` }).click();
  await card.getByRole("button", { name: "Yes, close it" }).click();
  await expect(card.getByRole("heading")).toContainText("closed");
});
