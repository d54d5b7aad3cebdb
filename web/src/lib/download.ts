// Downloads that need the token: fetched with it in the Authorization header (never in the URL, where logs and
// history would keep it), then handed to the browser as a file from a blob.

/** Fetches `path` signed in as `token` and saves the answer as a file; resolves to a sentence saying why not, or
 * null when the file was saved. */
export async function downloadWithToken(
  path: string,
  token: string | null,
  fallbackName: string,
): Promise<string | null> {
  let response: Response;
  try {
    response = await fetch(path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  } catch {
    return "The server could not be reached; check your connection and try again.";
  }
  if (!response.ok) return errorOf(response);
  const blob = await response.blob();
  const name = filenameOf(response.headers.get("content-disposition")) ?? fallbackName;
  saveBlob(blob, name);
  return null;
}

/** The file name a Content-Disposition header gives, if any. */
export function filenameOf(disposition: string | null): string | null {
  const match = disposition && /filename="?([^";]+)"?/i.exec(disposition);
  return match ? (match[1] ?? null) : null;
}

async function errorOf(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON: say what status it was
  }
  if (response.status === 401) return "Sign in again: the server did not accept your session.";
  if (response.status === 429) return "Too many downloads in a short time; wait a minute and try again.";
  return `The download failed (HTTP ${response.status}); try again.`;
}

export function saveBlob(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
