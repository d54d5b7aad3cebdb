// Whether this browser has opened a task's annotate page before (its instructions then start folded).
const KEY = "dynaforge.seen.";

export function seenBefore(code: string): boolean {
  try {
    return localStorage.getItem(KEY + code) !== null;
  } catch {
    return false;
  }
}

export function markSeen(code: string): void {
  try {
    localStorage.setItem(KEY + code, String(Date.now()));
  } catch {
    // storage disabled: the instructions open on every visit
  }
}
