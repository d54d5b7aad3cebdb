// File uploads: a GraphQL multipart request (the spec urql and Apollo follow) sent by XMLHttpRequest, which, unlike
// fetch, reports how much of the body has gone. The operation is named by its trusted-document hash in the
// operations part (as urql's persisted queries name it), never by its text; the custom Apollo-Require-Preflight
// header is what the server asks of multipart requests (a cross-site form cannot send it: no CSRF).

/** How much of the request body has been sent, in bytes. */
export interface UploadProgress {
  loaded: number;
  total: number;
}

/** A GraphQL response, or why none came: `failure` is a sentence for people (transport, HTTP or GraphQL error). */
export interface UploadOutcome<T> {
  data: T | null;
  failure: string | null;
}

interface HashedDocument {
  __meta__?: { hash?: string };
}

/** Sets `value` at a dotted `path` ("input.file") inside a copy of `variables`. */
function withValueAt(variables: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (head === undefined) return variables;
  const inner = variables[head];
  return {
    ...variables,
    [head]: rest.length ? withValueAt((inner ?? {}) as Record<string, unknown>, rest, value) : value,
  };
}

/** The multipart body: `operations` (variables with the file's place null, the document's hash), `map` (that place
 * is file "0") and the file. `filePath` is the file's place in the variables, e.g. "input.file". */
export function multipartBody(
  document: unknown,
  variables: Record<string, unknown>,
  filePath: string,
  file: Blob,
  filename: string,
): FormData {
  const hash = (document as HashedDocument).__meta__?.hash;
  if (!hash) throw new Error("the operation is not a registered document (run npm run codegen)");
  const operations = {
    variables: withValueAt(variables, filePath.split("."), null),
    extensions: { persistedQuery: { version: 1, sha256Hash: hash } },
  };
  const body = new FormData();
  body.append("operations", JSON.stringify(operations));
  body.append("map", JSON.stringify({ "0": [`variables.${filePath}`] }));
  body.append("0", file, filename);
  return body;
}

/** The sentence for an answer that holds no data: the server's own words where it gave some. */
export function failureOf(status: number, text: string): string {
  let said: string | undefined;
  try {
    const parsed = JSON.parse(text) as { errors?: { message?: string }[]; detail?: string };
    said = parsed.errors?.[0]?.message ?? parsed.detail;
  } catch {
    said = text.trim() || undefined;
  }
  if (status === 413) return said ?? "The file is larger than the server accepts.";
  if (status === 401 || status === 403) return said ?? "Sign in again, then retry the upload.";
  if (status >= 500) return "The server failed while storing the file; try again later.";
  return said ?? `The upload was refused (HTTP ${status}).`;
}

/** Reads a finished request's answer. */
export function outcomeOf<T>(status: number, text: string): UploadOutcome<T> {
  if (status === 200) {
    try {
      const parsed = JSON.parse(text) as { data?: T | null; errors?: { message?: string }[] };
      if (parsed.data) return { data: parsed.data, failure: null };
      return { data: null, failure: parsed.errors?.[0]?.message ?? "The server gave no answer; try again." };
    } catch {
      return { data: null, failure: "The server's answer could not be read; try again." };
    }
  }
  if (status === 0)
    return { data: null, failure: "The server could not be reached; check your connection and try again." };
  return { data: null, failure: failureOf(status, text) };
}

/** Sends an operation that carries one file; resolves with its answer (never rejects). Abort with `signal`. */
export function uploadOperation<T>(options: {
  document: unknown;
  variables: Record<string, unknown>;
  filePath: string;
  file: File;
  token: string | null;
  onProgress?: (progress: UploadProgress) => void;
  signal?: AbortSignal;
  url?: string;
}): Promise<UploadOutcome<T>> {
  const { document, variables, filePath, file, token, onProgress, signal, url = "/graphql" } = options;
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("Apollo-Require-Preflight", "true");
    xhr.setRequestHeader("Accept", "application/graphql-response+json, application/json");
    if (token) xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress?.({ loaded: event.loaded, total: event.total });
    };
    xhr.onload = () => resolve(outcomeOf<T>(xhr.status, xhr.responseText));
    xhr.onerror = () => resolve(outcomeOf<T>(0, ""));
    xhr.onabort = () => resolve({ data: null, failure: "The upload was cancelled." });
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(multipartBody(document, variables, filePath, file, file.name));
  });
}
