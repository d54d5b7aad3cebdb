import { describe, expect, it } from "vitest";
import { breakDue, IDLE_MS } from "../src/lib/breaks";

describe("break reminders", () => {
  const minute = 60_000;
  it("is due after the task's minutes of continuous work", () => {
    expect(breakDue(0, 29 * minute, 29 * minute, 30)).toBe(false);
    expect(breakDue(0, 30 * minute, 30 * minute, 30)).toBe(true);
  });
  it("is not due for someone idle long enough to have had a break", () => {
    expect(breakDue(0, 20 * minute, 20 * minute + IDLE_MS, 30)).toBe(false);
    expect(breakDue(0, 31 * minute, 31 * minute + IDLE_MS - 1, 30)).toBe(true);
  });
});
