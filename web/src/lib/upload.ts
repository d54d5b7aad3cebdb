// Files sent to the API: a GraphQL multipart request (operations, map, the file) with the header the server asks
// for (Apollo-Require-Preflight, which a cross-site form cannot send) and the token in the Authorization header.
// A multipart request names its document by its text, not its id, so the registered text is sent exactly as the
// build registered it.
import type { TypedDocumentNode } from "@urql/core";

interface HashedDocument {
  __meta__?: { hash?: string };
}

interface GraphQLAnswer<T> {
  data?: T | null;
  errors?: { message: string }[];
  detail?: string;
}

/** What an upload came back with: the mutation's data, or a sentence saying why there is none. */
export type UploadAnswer<T> = { data: T; problem?: undefined } | { data?: undefined; problem: string };

let manifest: Promise<Record<string, string>> | null = null;

/** The registered text of a document, by the hash the build embedded in it. */
async function registeredText(document: unknown): Promise<string> {
  const hash = (document as HashedDocument).__meta__?.hash;
  manifest ??= import("../gql/persisted-documents.json").then((m) => m.default as Record<string, string>);
  const texts = await manifest;
  const text = hash && (texts[hash] ?? texts[`sha256:${hash}`]);
  if (!text) throw new Error("this operation is not registered with the build");
  return text;
}

/** Sends `document` with `variables`, its `input.file` being `file`. */
export async function uploadFile<T, V extends { input: object }>(
  token: string | null,
  document: TypedDocumentNode<T, V>,
  variables: V,
  file: File,
): Promise<UploadAnswer<T>> {
  const body = new FormData();
  const query = await registeredText(document);
  body.append(
    "operations",
    JSON.stringify({ query, variables: { ...variables, input: { ...variables.input, file: null } } }),
  );
  body.append("map", JSON.stringify({ 0: ["variables.input.file"] }));
  body.append("0", file, file.name);
  const headers: Record<string, string> = { "apollo-require-preflight": "true", accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch("/graphql", { method: "POST", body, headers });
  } catch {
    return { problem: "The server could not be reached; check your connection and try again." };
  }
  if (response.status === 413) return { problem: "The file is too large for this server." };
  let answer: GraphQLAnswer<T> | null = null;
  try {
    answer = (await response.json()) as GraphQLAnswer<T>;
  } catch {
    answer = null;
  }
  if (answer?.data) return { data: answer.data };
  const message = answer?.errors?.[0]?.message ?? answer?.detail;
  return { problem: message ?? `The server refused the upload (HTTP ${response.status}); try again.` };
}
