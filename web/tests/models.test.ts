import { describe, expect, it } from "vitest";
import { allowanceText, intervalText, isModelArchive, metricValue, parseJsonObject } from "../src/lib/models";
import { failureOf, multipartBody, outcomeOf } from "../src/lib/uploadProgress";

describe("the Models screens' words and numbers", () => {
  it("formats metric values and intervals", () => {
    expect(metricValue(0.61234)).toBe("0.612");
    expect(metricValue(1234.5)).toBe("1235");
    expect(metricValue(null)).toBe("–");
    expect(intervalText({ low: 0.5, high: 0.75 })).toBe("0.500 – 0.750");
    expect(intervalText(null)).toBe("–");
  });

  it("knows the archive kinds and reads options as a JSON object", () => {
    expect(isModelArchive("m.tar.gz") && isModelArchive("m.ZIP") && isModelArchive("m.tgz")).toBe(true);
    expect(isModelArchive("model.bin")).toBe(false);
    expect(parseJsonObject("")).toEqual({ value: null, error: null });
    expect(parseJsonObject('{"max_length": 64}').value).toEqual({ max_length: 64 });
    expect(parseJsonObject("[1]").error).toMatch(/JSON object/);
    expect(parseJsonObject("{x").error).toMatch(/not valid JSON/);
  });
});

describe("the submission allowance", () => {
  it("says how many are left, or when the next one frees up", () => {
    expect(allowanceText(3, 5, null)).toBe("3 of 5 submissions left in the last 24 hours.");
    expect(allowanceText(1, 1, null)).toBe("1 of 1 submission left in the last 24 hours.");
    expect(allowanceText(0, 5, "2026-11-30T10:00:00Z")).toMatch(
      /^You made all 5 submissions this task takes in 24 hours\. The next one frees up at .+\.$/,
    );
    expect(allowanceText(0, 5, null)).toBe("You made all 5 submissions this task takes in 24 hours.");
  });
});

describe("a multipart upload", () => {
  it("names the document by its hash and puts the file at its place", async () => {
    const document = { __meta__: { hash: "sha256:abc" } };
    const body = multipartBody(document, { input: { name: "m", file: "x" } }, "input.file", new Blob(["z"]), "m.zip");
    expect(JSON.parse(String(body.get("operations")))).toEqual({
      variables: { input: { name: "m", file: null } },
      extensions: { persistedQuery: { version: 1, sha256Hash: "sha256:abc" } },
    });
    expect(JSON.parse(String(body.get("map")))).toEqual({ "0": ["variables.input.file"] });
    expect(body.get("0")).toBeInstanceOf(Blob);
    expect(() => multipartBody({}, {}, "input.file", new Blob([]), "m.zip")).toThrow(/registered/);
  });

  it("reads answers and refusals in the server's words", () => {
    expect(outcomeOf(200, '{"data": {"uploadModel": {"__typename": "ModelUploaded"}}}').failure).toBeNull();
    expect(outcomeOf(200, '{"errors": [{"message": "boom"}]}').failure).toBe("boom");
    expect(outcomeOf(0, "").failure).toMatch(/could not be reached/);
    expect(failureOf(413, '{"detail": "The request has 9 bytes, more than 8"}')).toMatch(/more than 8/);
    expect(failureOf(400, "Multipart requests must send the header")).toMatch(/header/);
    expect(failureOf(502, "")).toMatch(/try again later/);
  });
});
