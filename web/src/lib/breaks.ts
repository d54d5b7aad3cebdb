// Break reminders (a task's breakReminderMinutes): after that many minutes of continuous work on a task's pages the
// app suggests a break. The clock is the tab's (sessionStorage), so moving between writing and validating does not
// reset it; ten minutes without a key or a click count as a break and start it again.
import { useEffect, useState } from "react";

const KEY = "dynaforge.working-since";
export const IDLE_MS = 10 * 60 * 1000;

/** Whether a break is due: working since ``since`` for ``minutes`` or more, and active within the idle limit. */
export function breakDue(since: number, lastActive: number, now: number, minutes: number): boolean {
  return now - since >= minutes * 60_000 && now - lastActive < IDLE_MS;
}

function read(): number | null {
  try {
    const value = Number(sessionStorage.getItem(KEY));
    return Number.isFinite(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}

function write(value: number): void {
  try {
    sessionStorage.setItem(KEY, String(value));
  } catch {
    // storage disabled: the clock runs for this page only
  }
}

/** [whether to suggest a break now, "I'm back" (starts the clock again)]; never due without ``minutes``. */
export function useBreakReminder(minutes: number | null | undefined): [boolean, () => void] {
  const [due, setDue] = useState(false);
  useEffect(() => {
    if (!minutes) return;
    let lastActive = Date.now();
    let since = read() ?? lastActive;
    write(since);
    const active = () => {
      const now = Date.now();
      if (now - lastActive >= IDLE_MS) {
        since = now; // back from a break the app did not suggest
        write(since);
      }
      lastActive = now;
    };
    const check = () => {
      since = read() ?? since;
      if (breakDue(since, lastActive, Date.now(), minutes)) setDue(true);
    };
    window.addEventListener("keydown", active);
    window.addEventListener("pointerdown", active);
    const timer = setInterval(check, 15_000);
    check();
    return () => {
      window.removeEventListener("keydown", active);
      window.removeEventListener("pointerdown", active);
      clearInterval(timer);
    };
  }, [minutes]);
  return [
    due,
    () => {
      write(Date.now());
      setDue(false);
    },
  ];
}

/** The reminder's words. */
export function breakWords(minutes: number): string {
  return `You have been working for ${minutes} minutes or more. Take a short break: stand up, look away from the screen. Your draft is kept.`;
}
