// Drafts of examples, kept in this browser per task and context (localStorage), so that another context, a
// reload or a walk to another page never loses what someone was writing. A draft goes once its example is stored,
// or after a week.
import type { FormValues } from "./fields";

const PREFIX = "dynaforge.draft.";
const WEEK_MS = 7 * 24 * 3600 * 1000;

interface Stored {
  values: FormValues;
  savedAt: number;
}

function key(code: string, contextId: string | null): string {
  return `${PREFIX}${code}.${contextId ?? "none"}`;
}

function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null; // storage disabled: drafts are simply not kept
  }
}

/** Whether a draft holds anything someone typed or chose. */
export function hasContent(values: FormValues): boolean {
  return Object.values(values).some((v) => (typeof v === "string" ? v.trim() !== "" : v !== undefined && v !== false));
}

function read(name: string, now: number): Stored | null {
  const raw = storage()?.getItem(name);
  if (!raw) return null;
  try {
    const stored = JSON.parse(raw) as Stored;
    if (typeof stored?.savedAt !== "number" || now - stored.savedAt > WEEK_MS || !stored.values) {
      storage()?.removeItem(name);
      return null;
    }
    return stored;
  } catch {
    storage()?.removeItem(name);
    return null;
  }
}

/** The draft kept for a task and context (null: none, or older than a week). */
export function loadDraft(code: string, contextId: string | null, now = Date.now()): FormValues | null {
  return read(key(code, contextId), now)?.values ?? null;
}

/** Keep ``values`` as the draft of a task and context; an empty draft is removed. */
export function saveDraft(code: string, contextId: string | null, values: FormValues, now = Date.now()): void {
  try {
    if (hasContent(values)) storage()?.setItem(key(code, contextId), JSON.stringify({ values, savedAt: now }));
    else storage()?.removeItem(key(code, contextId));
  } catch {
    // full or disabled storage: the draft lives in the page only
  }
}

export function clearDraft(code: string, contextId: string | null): void {
  storage()?.removeItem(key(code, contextId));
}

/** The most recent draft of the task on a context other than ``except`` (its context's id and when it was saved),
 * or null. Drafts without a context never count: they are the task's one draft. */
export function otherDraft(
  code: string,
  except: string | null,
  now = Date.now(),
): { contextId: string; savedAt: number } | null {
  const store = storage();
  if (!store) return null;
  const prefix = `${PREFIX}${code}.`;
  let best: { contextId: string; savedAt: number } | null = null;
  for (let i = 0; i < store.length; i++) {
    const name = store.key(i);
    if (!name?.startsWith(prefix)) continue;
    const contextId = name.slice(prefix.length);
    if (contextId === "none" || contextId === except) continue;
    const stored = read(name, now);
    if (stored && (!best || stored.savedAt > best.savedAt)) best = { contextId, savedAt: stored.savedAt };
  }
  return best;
}
