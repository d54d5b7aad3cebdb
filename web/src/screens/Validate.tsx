// Validate: pick a task (/validate), then vote on the examples of its queue (/validate/:code): Correct, Incorrect
// (with a corrected target), Flag (with a reason) or Skip.
import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import {
  buildFields,
  choiceTitles,
  type FieldDescriptor,
  type FormValues,
  fieldTitle,
  showValue,
  titleOf,
} from "../lib/fields";
import { useTutorialGate } from "../lib/tutorial";
import { BreakReminder } from "./BreakReminder";
import { ContentWarning, ContentWarningNotice } from "./ContentWarning";
import { FieldControls } from "./FieldControls";
import { ProblemBox } from "./Form";
import { TutorialLazy as Tutorial } from "./TutorialLazy";

const ValidateTasks = graphql(`
  query ValidateTasks {
    tasks {
      id
      code
      name
      description
      validationQueueSize
    }
  }
`);

const ValidateItem = graphql(`
  query ValidateItem($code: String!) {
    task(code: $code) {
      id
      code
      name
      labels
      contentWarning
      validatorGuidance
      verdictBy
      validationQueueSize
      settings {
        breakReminderMinutes
      }
      fields {
        ...TaskFieldParts
      }
    }
    exampleToValidate(taskCode: $code) {
      id
      fields
      fooled
      status
      votes {
        correct
        incorrect
        flagged
      }
      prediction {
        label
        span {
          text
          start
        }
        fields
      }
      context {
        id
        fields
      }
      nearDuplicate {
        similarity
      }
    }
  }
`);

const Vote = graphql(`
  mutation Vote($input: ValidateExampleInput!) {
    validateExample(input: $input) {
      __typename
      ... on ValidationRecorded {
        decided
        example {
          id
          status
          source
          adversary
          votes {
            correct
            incorrect
            flagged
          }
        }
      }
      ... on Error {
        message
      }
      ... on InvalidInput {
        fieldErrors {
          field
          message
        }
      }
      ... on RateLimited {
        retryAfterSeconds
      }
    }
  }
`);

const Flag = graphql(`
  mutation Flag($input: FlagExampleInput!) {
    flagExample(input: $input) {
      __typename
      ... on ExampleFlagged {
        example {
          id
          status
        }
      }
      ... on Error {
        message
      }
      ... on InvalidInput {
        fieldErrors {
          field
          message
        }
      }
      ... on RateLimited {
        retryAfterSeconds
      }
    }
  }
`);

const Withdraw = graphql(`
  mutation WithdrawValidation($input: WithdrawValidationInput!) {
    withdrawValidation(input: $input) {
      __typename
      ... on Error {
        message
      }
    }
  }
`);

/** How long after a vote its Undo is offered (the server allows 15 seconds; the button goes a little earlier). */
const UNDO_MS = 12_000;

/** What a vote revealed, in words: the counts so far (hidden until you vote, so that they cannot sway you) and
 * where the example came from. */
export function revealed(example: {
  votes: { correct: number; incorrect: number; flagged: number };
  source?: string | null;
  adversary?: string | null;
}): string {
  const { correct, incorrect, flagged } = example.votes;
  const by = example.adversary ? ` (${example.adversary})` : "";
  const source =
    example.source === "HUMAN"
      ? " A person wrote it."
      : example.source === "ASSISTED"
        ? ` A person wrote it from a machine suggestion${by}.`
        : example.source === "MACHINE"
          ? ` A machine adversary wrote it${by}.`
          : "";
  return ` Votes now: ${correct} correct, ${incorrect} incorrect, ${flagged} flagged.${source}`;
}

const Skip = graphql(`
  mutation Skip($input: SkipExampleInput!) {
    skipExample(input: $input) {
      __typename
      ... on ExampleSkipped {
        example {
          id
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

export default function Validate({ code }: { code?: string }) {
  const { session } = useAuth();
  if (!session)
    return (
      <section>
        <h1>Validate</h1>
        <p className="notice">
          <Link href="/signin">Sign in</Link> or <Link href="/register">register</Link> to check other people's
          examples.
        </p>
      </section>
    );
  return code ? <Queue code={code} /> : <TaskPicker />;
}

function TaskPicker() {
  const [{ data, error }] = useQuery({ query: ValidateTasks });
  return (
    <section>
      <h1>Validate</h1>
      <p className="lead">Check whether other people's examples are right. Choose a task:</p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      <ul className="cards">
        {data?.tasks.map((task) => (
          <li key={task.id} className="card">
            <h2>
              <Link href={`/validate/${encodeURIComponent(task.code)}`}>{task.name}</Link>
            </h2>
            <p>{task.description}</p>
            <p className="muted">
              {task.validationQueueSize == null ? "…" : `${queued(task.validationQueueSize)} waiting for you`}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}

const queued = (n: number) => (n === 1 ? "1 example" : `${n} examples`);

function Queue({ code }: { code: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({
    query: ValidateItem,
    variables: { code },
    requestPolicy: "network-only",
  });
  const [practising, donePractising] = useTutorialGate(code, true);
  const task = data?.task;
  const example = data?.exampleToValidate;
  const [done, setDone] = useState<string | null>(null);
  // The last vote, which Undo takes back for a few seconds.
  const [undoable, setUndoable] = useState<string | null>(null);
  const [withdrawing, withdraw] = useMutation(Withdraw);
  useEffect(() => {
    if (!undoable) return;
    const timer = setTimeout(() => setUndoable(null), UNDO_MS);
    return () => clearTimeout(timer);
  }, [undoable]);
  const next = (said: string, voted: string | null = null) => {
    setDone(said);
    setUndoable(voted);
    refetch({ requestPolicy: "network-only" });
  };
  async function undo(exampleId: string) {
    const result = await withdraw({ input: { id: exampleId } });
    const answer = result.data?.withdrawValidation;
    setUndoable(null);
    if (answer?.__typename === "ValidationWithdrawn") next("Your vote is withdrawn: vote again.");
    else if (answer && "message" in answer) setDone(answer.message);
    else if (result.error) setDone(transportMessage(result.error));
  }
  // Until the tutorial is passed the queue answers Forbidden; the tutorial stands in for it.
  if (error && !(practising && task)) return <p role="alert">{transportMessage(error)}</p>;
  if (!task)
    return fetching ? (
      <p className="muted">Loading…</p>
    ) : (
      <section>
        <h1>No such task</h1>
        <p>
          <Link href="/validate">Choose another task</Link>.
        </p>
      </section>
    );
  return (
    <section>
      <h1>Validate: {task.name}</h1>
      <p className="muted" data-queue-size>
        {queued(task.validationQueueSize ?? 0)} in your queue.
      </p>
      <BreakReminder minutes={task.settings.breakReminderMinutes} />
      <ContentWarningNotice code={task.code} warning={task.contentWarning} />
      <div role="status" className="done">
        {done}
        {undoable && (
          <>
            {" "}
            <button type="button" className="link" disabled={withdrawing.fetching} onClick={() => void undo(undoable)}>
              Undo
            </button>
          </>
        )}
      </div>
      {practising ? (
        <Tutorial
          code={task.code}
          what="validate"
          warning={task.contentWarning ?? null}
          onPassed={() => {
            donePractising();
            refetch({ requestPolicy: "network-only" });
          }}
        />
      ) : example ? (
        <ContentWarning code={task.code} warning={task.contentWarning}>
          <Item key={example.id} task={task} example={example} onDone={next} focusOnShow={done !== null} />
        </ContentWarning>
      ) : (
        !fetching && (
          <p>
            Nothing to validate here now. <Link href="/validate">Choose another task</Link> or{" "}
            <Link href={`/tasks/${encodeURIComponent(code)}`}>write examples</Link>.
          </p>
        )
      )}
    </section>
  );
}

type ItemExample = {
  id: string;
  fields: unknown;
  fooled?: boolean | null;
  status?: string;
  votes: { correct: number; incorrect: number; flagged: number };
  prediction?: { label?: string | null; span?: { text: string } | null; fields: unknown } | null;
  context?: { fields: unknown } | null;
  nearDuplicate?: { similarity: number } | null;
};

/** A key on its own (no modifier, not typed into a field) and what it does on an example to validate. */
const KEYS: Record<string, "CORRECT" | "incorrect" | "flag" | "skip"> = {
  c: "CORRECT",
  i: "incorrect",
  f: "flag",
  s: "skip",
};

function typingIn(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null;
  return !!element && (element.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(element.tagName));
}

function Item({
  task,
  example,
  onDone,
  focusOnShow = false,
}: {
  task: {
    code: string;
    labels: readonly string[];
    fields: readonly FieldDescriptor[];
    contentWarning?: string | null;
    validatorGuidance?: string | null;
  };
  example: ItemExample;
  onDone: (said: string, voted?: string | null) => void;
  /** Take the keyboard focus when shown (the example after a vote), so that the next key acts on it. */
  focusOnShow?: boolean;
}) {
  const [mode, setMode] = useState<"none" | "incorrect" | "flag">("none");
  const [values, setValues] = useState<FormValues>({});
  const [reason, setReason] = useState("");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [voting, vote] = useMutation(Vote);
  const [flagging, flag] = useMutation(Flag);
  const [skipping, skip] = useMutation(Skip);
  const shown = useRef(Date.now()); // the vote records how long the validator spent on this example
  const card = useRef<HTMLElement>(null);
  const panel = useRef<HTMLFieldSetElement>(null);
  const onKey = useRef<(event: KeyboardEvent) => void>(() => {});
  const busy = voting.fetching || flagging.fetching || skipping.fetching;
  const fields = {
    ...((example.context?.fields as Record<string, unknown>) ?? {}),
    ...(example.fields as Record<string, unknown>),
  };
  const targets = task.fields.filter((f) => f.role === "TARGET");

  async function sendVote(label: "CORRECT" | "INCORRECT") {
    let correctedTarget: Record<string, unknown> | null = null;
    if (label === "INCORRECT") {
      const built = buildFields(
        targets.map((f) => ({ ...f, required: false })),
        values,
        task.labels,
      );
      if (Object.keys(built.errors).length)
        return setProblem({ message: "Check the corrected answer.", fields: built.errors });
      correctedTarget = Object.keys(built.fields).length ? built.fields : null;
    }
    const result = await vote({
      input: {
        id: example.id,
        label,
        correctedTarget,
        reason: reason.trim() || null,
        timeTakenMs: Math.min(Date.now() - shown.current, 24 * 3600 * 1000),
      },
    });
    const answer = result.data?.validateExample;
    const failed = problemOf(
      result.error,
      answer,
      "ValidationRecorded",
      targets.map((f) => f.name),
    );
    setProblem(failed);
    if (!failed && answer?.__typename === "ValidationRecorded")
      onDone(
        `${label === "CORRECT" ? "Voted correct." : "Voted incorrect."}${revealed(answer.example)}`,
        answer.decided ? null : example.id, // a vote that decided it stays
      );
  }

  async function sendFlag() {
    const result = await flag({ input: { id: example.id, reason } });
    const failed = problemOf(result.error, result.data?.flagExample, "ExampleFlagged", ["reason"]);
    setProblem(failed);
    if (!failed) onDone("Flagged for the task's owners.");
  }

  async function sendSkip() {
    const result = await skip({ input: { id: example.id } });
    const failed = problemOf(result.error, result.data?.skipExample, "ExampleSkipped");
    setProblem(failed);
    if (!failed) onDone("Skipped: it comes back after the others.");
  }

  // C, I, F and S act from anywhere on the page (not while typing in a field); Escape closes an open panel,
  // from inside it too.
  onKey.current = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.key === "Escape" && mode !== "none") {
      setMode("none");
      card.current?.focus();
      return;
    }
    if (typingIn(event.target)) return;
    const action = KEYS[event.key.toLowerCase()];
    if (!action || busy) return;
    event.preventDefault();
    if (action === "CORRECT") void sendVote("CORRECT");
    else if (action === "skip") void sendSkip();
    else setMode(action);
  };
  useEffect(() => {
    const listener = (event: KeyboardEvent) => onKey.current(event);
    document.addEventListener("keydown", listener);
    return () => document.removeEventListener("keydown", listener);
  }, []);
  useEffect(() => {
    if (focusOnShow) card.current?.focus();
  }, [focusOnShow]);
  useEffect(() => {
    // An opened panel takes the focus at its first control (the corrected answer, or the flag's reason).
    if (mode !== "none") panel.current?.querySelector<HTMLElement>("input, select, textarea, button")?.focus();
  }, [mode]);

  const prediction = example.prediction;
  const titles = choiceTitles(task.fields);
  const shownValue = (value: unknown) => (typeof value === "string" ? titleOf(titles, value) : showValue(value));
  return (
    <article className="card" aria-label="Example to validate" ref={card} tabIndex={-1}>
      <dl className="example">
        {task.fields.map((f) =>
          fields[f.name] === undefined ? null : (
            <div key={f.name} className={`role-${f.role.toLowerCase()}`}>
              <dt>{fieldTitle(f.name)}</dt>
              <dd>{f.type === "CHOICE" ? shownValue(fields[f.name]) : showValue(fields[f.name])}</dd>
            </div>
          ),
        )}
        {prediction && (
          <div>
            <dt>The model answered</dt>
            <dd>
              <ContentWarning code={task.code} warning={task.contentWarning}>
                {prediction.label
                  ? titleOf(titles, prediction.label)
                  : (prediction.span?.text ?? showValue(prediction.fields))}
                {example.fooled != null && (example.fooled ? " (fooled)" : " (not fooled)")}
              </ContentWarning>
            </dd>
          </div>
        )}
      </dl>
      {example.nearDuplicate && (
        <p className="notice small">
          Its author sent it although it is {Math.round(example.nearDuplicate.similarity * 100)}% similar to an earlier
          example of this round: judge it as any other, and flag it if it only repeats the other.
        </p>
      )}
      {example.status === "PENDING_VERDICT" && (
        <p className="notice small">
          Its author says the model's answer is wrong. Vote <strong>Correct</strong> if it is (under the guidance
          below), <strong>Incorrect</strong> if the answer is fine: your votes decide whether the model was fooled.
        </p>
      )}
      {task.validatorGuidance && (
        <details className="instructions" open>
          <summary>How to judge</summary>
          <p>{task.validatorGuidance}</p>
        </details>
      )}
      <div className="actions votes">
        <button type="button" disabled={busy} onClick={() => sendVote("CORRECT")} aria-keyshortcuts="C">
          Correct
        </button>
        <button
          type="button"
          className="secondary"
          aria-expanded={mode === "incorrect"}
          aria-keyshortcuts="I"
          disabled={busy}
          onClick={() => setMode(mode === "incorrect" ? "none" : "incorrect")}
        >
          Incorrect
        </button>
        <button
          type="button"
          className="secondary"
          aria-expanded={mode === "flag"}
          aria-keyshortcuts="F"
          disabled={busy}
          onClick={() => setMode(mode === "flag" ? "none" : "flag")}
        >
          Flag
        </button>
        <button type="button" className="secondary" disabled={busy} onClick={sendSkip} aria-keyshortcuts="S">
          Skip
        </button>
      </div>
      <p className="muted small" data-keys>
        Keys: <kbd>C</kbd> correct, <kbd>I</kbd> incorrect, <kbd>F</kbd> flag, <kbd>S</kbd> skip, <kbd>Esc</kbd> closes
        a panel.
      </p>
      {mode === "incorrect" && (
        <fieldset className="panel" ref={panel}>
          <legend>What should the answer be? (optional)</legend>
          <FieldControls
            fields={targets.map((f) => ({ ...f, required: false }))}
            labels={task.labels}
            values={values}
            errors={problem?.fields ?? {}}
            context={fields}
            onChange={(name, value) => setValues((v) => ({ ...v, [name]: value }))}
          />
          <ReasonBox value={reason} onChange={setReason} label="Why (optional)" />
          <button type="button" disabled={busy} onClick={() => sendVote("INCORRECT")}>
            Send vote: incorrect
          </button>
        </fieldset>
      )}
      {mode === "flag" && (
        <fieldset className="panel" ref={panel}>
          <legend>Flag this example</legend>
          <ReasonBox value={reason} onChange={setReason} label="Reason" error={problem?.fields.reason} />
          <button type="button" disabled={busy} onClick={sendFlag}>
            Send flag
          </button>
        </fieldset>
      )}
      <ProblemBox problem={problem} />
    </article>
  );
}

function ReasonBox({
  value,
  onChange,
  label,
  error,
}: {
  value: string;
  onChange: (value: string) => void;
  label: string;
  error?: string;
}) {
  return (
    <div className="control">
      <label htmlFor="vote-reason">{label}</label>
      <textarea
        id="vote-reason"
        rows={2}
        maxLength={2000}
        value={value}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? "vote-reason-error" : undefined}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
      {error && (
        <p className="error" id="vote-reason-error">
          {error}
        </p>
      )}
    </div>
  );
}
