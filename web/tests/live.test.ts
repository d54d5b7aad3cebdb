import { describe, expect, it } from "vitest";
import { currentOf, endedBetween, isUnfinished, unknownOf, withLatest } from "../src/lib/live";

const job = (id: string, status: string, progress = 0) => ({ id, status, progress });

describe("lists kept current by update events", () => {
  it("replaces a listed object by its latest state, keeping the list's order", () => {
    let latest = withLatest(new Map(), job("b", "RUNNING", 0.2));
    latest = withLatest(latest, job("b", "RUNNING", 0.6));
    latest = withLatest(latest, job("z", "QUEUED"));
    const list = [job("a", "DONE", 1), job("b", "QUEUED")];
    expect(currentOf(list, latest)).toEqual([job("a", "DONE", 1), job("b", "RUNNING", 0.6)]);
    expect(currentOf(list, undefined)).toEqual(list);
  });

  it("never moves an object the list shows ended back to running", () => {
    const latest = withLatest(new Map(), job("a", "RUNNING", 0.5));
    expect(currentOf([job("a", "SUCCEEDED", 1)], latest)).toEqual([job("a", "SUCCEEDED", 1)]);
    expect(currentOf([job("a", "QUEUED")], latest)).toEqual([job("a", "RUNNING", 0.5)]);
  });

  it("never changes the map it was given", () => {
    const before = new Map([["a", job("a", "QUEUED")]]);
    const after = withLatest(before, job("a", "DONE", 1));
    expect(before.get("a")?.status).toBe("QUEUED");
    expect(after.get("a")?.status).toBe("DONE");
  });

  it("knows which statuses may still change", () => {
    expect(["QUEUED", "RUNNING", "DONE", "FAILED", "SUCCEEDED", "CANCELLED"].filter(isUnfinished)).toEqual([
      "QUEUED",
      "RUNNING",
    ]);
  });

  it("says which objects the list lacks, and which ended between two states", () => {
    let latest = withLatest(new Map(), job("z", "QUEUED"));
    latest = withLatest(latest, job("a", "DONE", 1));
    expect(unknownOf([job("a", "RUNNING")], latest)).toEqual(["z"]);
    expect(unknownOf([job("a", "RUNNING")], undefined)).toEqual([]);
    const before = new Map([
      ["a", "RUNNING"],
      ["b", "QUEUED"],
      ["c", "DONE"],
    ]);
    const now = [job("a", "SUCCEEDED", 1), job("b", "RUNNING"), job("c", "DONE"), job("n", "FAILED")];
    expect(endedBetween(before, now)).toEqual(["a"]);
    expect(endedBetween(null, now)).toEqual([]);
  });
});
