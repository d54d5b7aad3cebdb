// The suggested break of a task's breakReminderMinutes (lib/breaks.ts), as the annotate and validate pages show it.
import { breakWords, useBreakReminder } from "../lib/breaks";

export function BreakReminder({ minutes }: { minutes: number | null | undefined }) {
  const [due, backFromBreak] = useBreakReminder(minutes);
  if (!due || !minutes) return null;
  return (
    <div role="alert" className="notice">
      <p>{breakWords(minutes)}</p>
      <button type="button" onClick={backFromBreak}>
        I&rsquo;m back
      </button>
    </div>
  );
}
