import { beforeEach, describe, expect, it } from "vitest";
import { clearDraft, hasContent, loadDraft, otherDraft, saveDraft } from "../src/lib/drafts";

describe("drafts kept in the browser", () => {
  beforeEach(() => localStorage.clear());

  it("keeps a draft per task and context, and drops an empty one", () => {
    saveDraft("nli", "Q29udGV4dDox", { hypothesis: "A man sleeps.", label: "neutral" }, 1000);
    saveDraft("nli", "Q29udGV4dDoy", { hypothesis: "" }, 1000);
    expect(loadDraft("nli", "Q29udGV4dDox", 2000)).toEqual({ hypothesis: "A man sleeps.", label: "neutral" });
    expect(loadDraft("nli", "Q29udGV4dDoy", 2000)).toBeNull();
    expect(loadDraft("sentiment", null, 2000)).toBeNull();
    clearDraft("nli", "Q29udGV4dDox");
    expect(loadDraft("nli", "Q29udGV4dDox", 2000)).toBeNull();
  });

  it("forgets a draft after a week, and a broken one at once", () => {
    saveDraft("qa", null, { question: "Who?" }, 0);
    expect(loadDraft("qa", null, 8 * 24 * 3600 * 1000)).toBeNull();
    localStorage.setItem("dynaforge.draft.qa.none", "{not json");
    expect(loadDraft("qa", null)).toBeNull();
    expect(localStorage.getItem("dynaforge.draft.qa.none")).toBeNull();
  });

  it("finds the latest draft on another context of the task", () => {
    saveDraft("nli", "A", { hypothesis: "one" }, 1000);
    saveDraft("nli", "B", { hypothesis: "two" }, 3000);
    saveDraft("qa", "C", { question: "three" }, 5000);
    expect(otherDraft("nli", "B", 6000)).toEqual({ contextId: "A", savedAt: 1000 });
    expect(otherDraft("nli", "Z", 6000)).toEqual({ contextId: "B", savedAt: 3000 });
    expect(otherDraft("sentiment", null, 6000)).toBeNull();
  });

  it("says whether a draft holds anything", () => {
    expect(hasContent({ a: " ", b: undefined, c: false })).toBe(false);
    expect(hasContent({ a: "x" })).toBe(true);
    expect(hasContent({ c: true })).toBe(true);
  });
});
