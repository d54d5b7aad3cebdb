import { afterEach, describe, expect, it, vi } from "vitest";
import { filenameOf } from "../src/lib/download";
import { uploadFile } from "../src/lib/upload";

const Doc = { __meta__: { hash: "sha256:abc" } } as never;

vi.mock("../src/gql/persisted-documents.json", () => ({
  default: {
    "sha256:abc": "mutation U($input: UploadContextsInput!) { uploadContexts(input: $input) { __typename } }",
  },
}));

afterEach(() => vi.unstubAllGlobals());

describe("filenameOf", () => {
  it("reads the attachment's name", () => {
    expect(filenameOf('attachment; filename="nli-r1.jsonl"')).toBe("nli-r1.jsonl");
    expect(filenameOf(null)).toBeNull();
  });
});

describe("uploadFile", () => {
  it("sends a multipart request with the registered text, the token and the preflight header", async () => {
    const fetch = vi.fn(
      async () => new Response(JSON.stringify({ data: { uploadContexts: { __typename: "ContextsAdded" } } })),
    );
    vi.stubGlobal("fetch", fetch);
    const file = new File(["{}"], "c.jsonl");
    const answer = await uploadFile("tok", Doc, { input: { taskCode: "nli", file } }, file);
    expect(answer.data).toEqual({ uploadContexts: { __typename: "ContextsAdded" } });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/graphql");
    const headers = init.headers as Record<string, string>;
    expect(headers.authorization).toBe("Bearer tok");
    expect(headers["apollo-require-preflight"]).toBe("true");
    const body = init.body as FormData;
    const operations = JSON.parse(String(body.get("operations")));
    expect(operations.query).toContain("uploadContexts");
    expect(operations.variables.input).toEqual({ taskCode: "nli", file: null });
    expect(JSON.parse(String(body.get("map")))).toEqual({ 0: ["variables.input.file"] });
  });

  it("says in words why an upload failed", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response("", { status: 413 })),
    );
    const file = new File(["{}"], "c.jsonl");
    expect((await uploadFile(null, Doc, { input: { file } }, file)).problem).toMatch(/too large/);
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => Promise.reject(new TypeError("offline"))),
    );
    expect((await uploadFile(null, Doc, { input: { file } }, file)).problem).toMatch(/could not be reached/);
  });
});
