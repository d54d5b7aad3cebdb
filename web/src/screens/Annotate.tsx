// Annotate (/tasks/:code): the task's instructions and a context, a form built from the task's field descriptors,
// the model's answer and the verdict, machine adversaries' suggested edits beside the form (Suggestions.tsx), and the
// round's counters and fooling examples as they happen.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useClient, useMutation, useQuery, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import type {
  CreateExampleMutation,
  FieldType,
  ModelFooledFeedSubscription,
  ModelFooledFeedSubscriptionVariables,
  ShownPredictionFragment,
  VerdictDecidedLiveSubscription,
} from "../gql/graphql";
import { useAuth } from "../lib/auth";
import { clearDraft, hasContent, loadDraft, otherDraft, saveDraft } from "../lib/drafts";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import {
  buildFields,
  choicesOf,
  choiceTitles,
  type FieldDescriptor,
  type FormValue,
  type FormValues,
  fieldTitle,
  formFields,
  showValue,
  spanFromSelection,
  titleOf,
} from "../lib/fields";
import { percent } from "../lib/format";
import { markSeen, seenBefore } from "../lib/seen";
import { valuesFromFields } from "../lib/suggestions";
import { useTutorialGate } from "../lib/tutorial";
import { type Explanation, explainVerdict } from "../lib/verdicts";
import { BreakReminder } from "./BreakReminder";
import { ContentWarning, ContentWarningNotice } from "./ContentWarning";
import { FieldControls } from "./FieldControls";
import { ProblemBox } from "./Form";
import { Glossary } from "./Glossary";
import { SourceBadge } from "./SourceStats";
import { type SuggestionItem, Suggestions } from "./Suggestions";
import { TutorialLazy as Tutorial } from "./TutorialLazy";

const AnnotatePage = graphql(`
  query AnnotatePage($code: String!) {
    task(code: $code) {
      id
      code
      name
      description
      instructions
      contentWarning
      verdictBy
      labels
      active
      viewerIsOwner
      settings {
        breakReminderMinutes
      }
      fields {
        ...TaskFieldParts
      }
      currentRound {
        id
        number
        description
        endedAt
        collected
        fooled
        verifiedFooled
        stats {
          vmer
        }
      }
    }
  }
`);

const NextContext = graphql(`
  query NextContext($code: String!) {
    nextContext(taskCode: $code) {
      id
      fields
      tag
    }
  }
`);

const ContextById = graphql(`
  query ContextById($id: ID!) {
    node(id: $id) {
      ... on Context {
        id
        fields
        tag
      }
    }
  }
`);

type ShownContext = { id: string; fields: unknown; tag?: string | null };

const MyTaskStats = graphql(`
  query MyTaskStats($code: String!) {
    task(code: $code) {
      id
      viewerStats {
        taskCode
        remainingToday
        total {
          collected
          fooled
          verifiedFooled
        }
      }
    }
  }
`);

// What the form shows of the model's answer, in each outcome that has one.
export const ShownPrediction = graphql(`
  fragment ShownPrediction on Prediction {
    label
    span {
      text
      start
    }
    fields
    probabilities {
      label
      probability
    }
    confidence
    generation {
      tokens
      timeToFirstTokenMs
    }
  }
`);

// Targets of these types are written by the model (a language model's reply), so the form follows its stream.
const generativeTypes = new Set<FieldType>(["TEXT", "REFERENCES"]);

// The target's reply as it is written (generative tasks): the first event says the stream listens.
const ReplyStreamLive = graphql(`
  subscription ReplyStreamLive($streamId: String!) {
    replyStream(streamId: $streamId) {
      index
      model
      text
      done
    }
  }
`);

const CreateExample = graphql(`
  mutation CreateExample($input: CreateExampleInput!) {
    createExample(input: $input) {
      __typename
      ... on ExampleCreated {
        fooled
        prediction {
          ...ShownPrediction
        }
        example {
          id
          status
          fooled
          source
          adversary
          verdictExplanation {
            measure
            score
            threshold
            fooledBelow
          }
          round {
            id
            collected
            fooled
            verifiedFooled
            stats {
              vmer
            }
          }
        }
      }
      ... on PredictionPending {
        message
        example {
          id
          status
          source
          adversary
        }
      }
      ... on VerdictPending {
        decidedBy
        prediction {
          ...ShownPrediction
        }
        example {
          id
          status
          source
          adversary
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
      ... on NearDuplicate {
        similarity
        threshold
        yourExample {
          id
        }
      }
    }
  }
`);

const RetractExample = graphql(`
  mutation RetractExample($input: RetractExampleInput!) {
    retractExample(input: $input) {
      __typename
      ... on ExampleRetracted {
        example {
          id
          status
          round {
            id
            retracted
          }
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

// Live counters: every example stored and every vote updates the round (and the example, when it is shown whole)
// in the normalised cache, which re-renders whatever shows them. Someone else's example comes as a RedactedExample,
// which has no id: it never overwrites an example the cache holds whole.
export const LiveRoundCounters = graphql(`
  fragment LiveRoundCounters on Round {
    id
    collected
    fooled
    verifiedFooled
    stats {
      vmer
    }
  }
`);

const ExampleCreatedLive = graphql(`
  subscription ExampleCreatedLive($code: String!) {
    exampleCreated(taskCode: $code) {
      ... on Example {
        id
        status
        fooled
        round {
          ...LiveRoundCounters
        }
      }
      ... on RedactedExample {
        exampleId
        status
        round {
          ...LiveRoundCounters
        }
      }
    }
  }
`);

const VerdictDecidedLive = graphql(`
  subscription VerdictDecidedLive($code: String!) {
    verdictDecided(taskCode: $code) {
      ... on Example {
        id
        status
        fooled
        verdict {
          decidedBy
          rationale
        }
      }
    }
  }
`);

const ExampleValidatedLive = graphql(`
  subscription ExampleValidatedLive($code: String!) {
    exampleValidated(taskCode: $code) {
      label
      example {
        ... on Example {
          id
          status
          votes {
            correct
            incorrect
            flagged
          }
          round {
            ...LiveRoundCounters
          }
        }
        ... on RedactedExample {
          exampleId
          status
          round {
            ...LiveRoundCounters
          }
        }
      }
    }
  }
`);

const ModelFooledFeed = graphql(`
  subscription ModelFooledFeed($code: String!) {
    modelFooled(taskCode: $code) {
      id
      fields
      createdAt
    }
  }
`);

type Created = CreateExampleMutation["createExample"];
type FeedItem = { id: string; fields: unknown; createdAt: string };
type DecidedExample = Extract<VerdictDecidedLiveSubscription["verdictDecided"], { id: string }>;

export default function Annotate({ code }: { code: string }) {
  const { session } = useAuth();
  const [page] = useQuery({ query: AnnotatePage, variables: { code } });
  const [context, nextContext] = useQuery({ query: NextContext, variables: { code } });
  const [mine, refreshMine] = useQuery({ query: MyTaskStats, variables: { code }, pause: !session });
  const refreshStats = useCallback(() => refreshMine({ requestPolicy: "network-only" }), [refreshMine]);

  useSubscription({ query: ExampleCreatedLive, variables: { code }, pause: !session });
  useSubscription({ query: ExampleValidatedLive, variables: { code }, pause: !session }, (_, event) => {
    refreshStats();
    return event;
  });
  const [feed] = useSubscription<ModelFooledFeedSubscription, FeedItem[], ModelFooledFeedSubscriptionVariables>(
    { query: ModelFooledFeed, variables: { code }, pause: !session },
    (items = [], event) => [event.modelFooled, ...items].slice(0, 10),
  );

  const client = useClient();
  const [practising, donePractising] = useTutorialGate(code, Boolean(session));
  // The instructions are open on a first visit to the task, folded on later ones (the form stays in view).
  const [instructionsOpen] = useState(() => !seenBefore(code));
  useEffect(() => markSeen(code), [code]);
  // A context shown in place of the one nextContext served: the previous one (undo "Another context"), or one that
  // a draft kept in this browser was written on.
  const [override, setOverride] = useState<ShownContext | null>(null);
  const [previous, setPrevious] = useState<ShownContext | null>(null);
  const served = context.data?.nextContext ?? null;
  const ctx: ShownContext | null = override ?? served;
  const elsewhere = useMemo(
    () => (context.fetching || override ? null : otherDraft(code, served?.id ?? null)),
    [code, served, override, context.fetching],
  );
  const [openingDraft, setOpeningDraft] = useState(false);

  function another() {
    setPrevious(ctx && loadDraft(code, ctx.id) ? ctx : null);
    setOverride(null);
    nextContext({ requestPolicy: "network-only" });
  }

  async function openDraft(contextId: string) {
    setOpeningDraft(true);
    const result = await client.query(ContextById, { id: contextId }, { requestPolicy: "network-only" }).toPromise();
    setOpeningDraft(false);
    const node = result.data?.node;
    if (node && "fields" in node) setOverride({ id: node.id, fields: node.fields, tag: node.tag });
    else clearDraft(code, contextId); // retired or gone: its draft cannot be sent any more
  }

  const task = page.data?.task;
  if (page.error) return <p role="alert">{transportMessage(page.error)}</p>;
  if (page.fetching && !task) return <p className="muted">Loading the task…</p>;
  if (!task)
    return (
      <section>
        <h1>No such task</h1>
        <p>
          There is no task <code>{code}</code> you can see. <Link href="/">See the tasks</Link>.
        </p>
      </section>
    );
  const round = task.currentRound;
  const contextFields = task.fields.filter((f) => f.role === "CONTEXT");
  const myStats = mine.data?.task?.viewerStats;
  const remaining = myStats?.remainingToday;

  return (
    <div className="annotate">
      <div className="work">
        <h1>{task.name}</h1>
        <p className="lead">{task.description}</p>
        {task.viewerIsOwner && (
          <p className="small">
            <Link href={`/tasks/${encodeURIComponent(task.code)}/manage/rounds`}>Manage this task</Link>
          </p>
        )}
        <BreakReminder minutes={session ? task.settings.breakReminderMinutes : null} />
        <ContentWarningNotice code={task.code} warning={task.contentWarning} />
        {task.instructions && (
          <details className="instructions" open={instructionsOpen}>
            <summary>Instructions</summary>
            <p>{task.instructions}</p>
          </details>
        )}
        {!session && (
          <p className="notice">
            <Link href="/signin">Sign in</Link> or <Link href="/register">register</Link> to write examples.
          </p>
        )}
        {contextFields.length > 0 && !practising && (
          <ContentWarning code={task.code} warning={task.contentWarning}>
            <ContextView
              fields={contextFields}
              values={(ctx?.fields as Record<string, unknown>) ?? {}}
              loading={context.fetching}
              error={context.error ? transportMessage(context.error) : undefined}
              onAnother={another}
            />
          </ContentWarning>
        )}
        {contextFields.length > 0 && !practising && (
          <div aria-live="polite">
            {previous && previous.id !== ctx?.id && (
              <p className="notice small">
                Your draft on the previous context is kept.{" "}
                <button
                  type="button"
                  className="link"
                  onClick={() => {
                    setOverride(previous);
                    setPrevious(null);
                  }}
                >
                  Back to that context
                </button>
              </p>
            )}
            {!previous && elsewhere && (
              <p className="notice small">
                You have an unsent draft on another context.{" "}
                <button
                  type="button"
                  className="link"
                  disabled={openingDraft}
                  onClick={() => void openDraft(elsewhere.contextId)}
                >
                  Open it
                </button>
              </p>
            )}
          </div>
        )}
        {practising ? (
          <Tutorial
            code={task.code}
            what="write examples"
            warning={task.contentWarning ?? null}
            onPassed={donePractising}
          />
        ) : (
          <ExampleForm
            key={ctx?.id ?? "none"}
            code={task.code}
            fields={task.fields}
            labels={task.labels}
            contextId={ctx?.id ?? null}
            contextTag={ctx?.tag ?? null}
            context={(ctx?.fields as Record<string, unknown>) ?? {}}
            signedIn={Boolean(session)}
            onStored={refreshStats}
            contentWarning={task.contentWarning ?? null}
          />
        )}
      </div>
      <aside className="side" aria-label="Round">
        <h2>Round {round?.number ?? "–"}</h2>
        {round?.description && <p className="small round-description">{round.description}</p>}
        {round && (
          <dl className="counters">
            <div>
              <dt>Collected</dt>
              <dd data-counter="collected">{round.collected}</dd>
            </div>
            <div>
              <dt>Fooled</dt>
              <dd data-counter="fooled">{round.fooled}</dd>
            </div>
            <div>
              <dt>Verified</dt>
              <dd data-counter="verified">{round.verifiedFooled}</dd>
            </div>
            <div>
              <dt>vMER</dt>
              <dd>{percent(round.stats.vmer)}</dd>
            </div>
          </dl>
        )}
        {round && <Glossary decidedBy={task.verdictBy} />}
        {session && myStats && (
          <p className="muted">
            You: {myStats.total.collected} written, {myStats.total.fooled} fooled, {myStats.total.verifiedFooled}{" "}
            verified. {remaining == null ? "No daily limit." : `${remaining} left today.`}
          </p>
        )}
        <h2>Model fooled</h2>
        {session && !task.viewerIsOwner && (
          <p className="muted">
            Yours only: that someone's example fooled the model would tell you its label before it is validated.
          </p>
        )}
        {!session ? (
          <p className="muted">Sign in to follow the examples that fool the model.</p>
        ) : (
          <ol
            className="feed"
            aria-live="polite"
            aria-label={task.viewerIsOwner ? "Examples that fooled the model" : "Your examples that fooled the model"}
          >
            {(feed.data ?? []).length === 0 && <li className="muted">None yet since you opened this page.</li>}
            {(feed.data ?? []).map((item) => (
              <li key={item.id}>
                {formFields(task.fields)
                  .filter((f) => f.role === "INPUT")
                  .map((f) => showValue((item.fields as Record<string, unknown>)[f.name]))
                  .filter(Boolean)
                  .join(" · ")}
                <time dateTime={item.createdAt}> {new Date(item.createdAt).toLocaleTimeString()}</time>
              </li>
            ))}
          </ol>
        )}
      </aside>
    </div>
  );
}

function ContextView({
  fields,
  values,
  loading,
  error,
  onAnother,
}: {
  fields: readonly FieldDescriptor[];
  values: Record<string, unknown>;
  loading: boolean;
  error?: string;
  onAnother: () => void;
}) {
  return (
    <section className="context card" aria-label="Context">
      {error && <p role="alert">{error}</p>}
      {fields.map((f) => (
        <div key={f.name}>
          <h2 className="field-title">{fieldTitle(f.name)}</h2>
          <p className="context-text" data-context-field={f.name}>
            {showValue(values[f.name]) || (loading ? "Loading…" : "(none)")}
          </p>
        </div>
      ))}
      <button type="button" className="secondary" onClick={onAnother} disabled={loading}>
        Another context
      </button>
    </section>
  );
}

/** ``shown`` less the entries named in ``names`` (the same object when it has none of them). */
function without(shown: Record<string, string>, names: string[]): Record<string, string> {
  if (!names.some((name) => name in shown)) return shown;
  const left = { ...shown };
  for (const name of names) delete left[name];
  return left;
}

function ExampleForm({
  code,
  fields,
  labels,
  contextId,
  contextTag,
  context,
  signedIn,
  onStored,
  contentWarning,
}: {
  code: string;
  fields: readonly FieldDescriptor[];
  labels: readonly string[];
  contextId: string | null;
  contextTag: string | null;
  context: Record<string, unknown>;
  signedIn: boolean;
  onStored: () => void;
  contentWarning: string | null;
}) {
  const inputs = useMemo(() => formFields(fields), [fields]);
  // The draft kept in this browser for this task and context comes back; every change is kept again.
  const [restored] = useState(() => loadDraft(code, contextId));
  const [values, setValues] = useState<FormValues>(() => restored ?? {});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<Problem | null>(null);
  const [verdict, setVerdict] = useState<Created | null>(null);
  const [retracted, setRetracted] = useState(false);
  // A verdict that waits for the task's judge or its validators arrives as an event.
  const [live] = useSubscription<VerdictDecidedLiveSubscription, DecidedExample | null, { code: string }>(
    { query: VerdictDecidedLive, variables: { code }, pause: !signedIn },
    (previous, event) => {
      onStored();
      const example = event.verdictDecided;
      return "id" in example ? example : (previous ?? null); // someone else's, redacted: not the one awaited
    },
  );
  const decided = live.data ?? null;
  // The suggestion the form holds (put there with "Use this"): the next submission names it, and counts as ASSISTED.
  const [from, setFrom] = useState<{ id: string; adversary: string } | null>(null);
  // A new one after each stored example: the suggestions of the last draft are cleared.
  const [suggestRound, setSuggestRound] = useState(0);
  const started = useRef(Date.now());
  const form = useRef<HTMLFormElement>(null);
  const [creating, create] = useMutation(CreateExample);
  // The answer when the draft fooled the model but is close to an earlier example of the round: nothing was stored,
  // and the writer changes it or sends it anyway.
  const [nearCopy, setNearCopy] = useState<{ similarity: number; threshold: number; yours: boolean } | null>(null);
  const client = useClient();
  // The reply of a target that writes, as it streams in (null when nothing streams).
  const [streaming, setStreaming] = useState<string | null>(null);
  const writes = useMemo(() => fields.some((f) => f.role === "TARGET" && generativeTypes.has(f.type)), [fields]);

  /** Follows a new reply stream; resolves with its id once the server listens (null when it does not in time:
   * the example is sent without one and the reply shows when it is complete). */
  function openReplyStream(): Promise<{ id: string; close: () => void } | null> {
    const id = crypto.randomUUID();
    const parts: string[] = [];
    return new Promise((resolve) => {
      let listening = false;
      const subscription = client.subscription(ReplyStreamLive, { streamId: id }).subscribe((result) => {
        const piece = result.data?.replyStream;
        if (!piece) return;
        if (!listening) {
          listening = true;
          resolve({ id, close: () => subscription.unsubscribe() });
        }
        if (piece.index > 0 && piece.text) {
          parts[piece.index - 1] = piece.text;
          setStreaming(parts.join(""));
        }
      });
      setTimeout(() => {
        if (!listening) {
          subscription.unsubscribe();
          resolve(null);
        }
      }, 2000);
    });
  }
  const [retracting, retract] = useMutation(RetractExample);
  const setValue = useCallback((name: string, value: FormValue) => setValues((v) => ({ ...v, [name]: value })), []);
  // The draft as it was sent, and the label its writer gave (a choice target's value): the verdict speaks of it.
  const sent = useRef<{ values: FormValues; said: string | null } | null>(null);
  const verdictArea = useRef<HTMLDivElement>(null);
  const previous = useRef(values);
  const sentValues = sent.current?.values;
  useEffect(() => {
    if (sentValues === values) return; // stored as it is: its draft was cleared
    saveDraft(code, contextId, values);
  }, [code, contextId, values, sentValues]);
  useEffect(() => {
    // Leaving the page (a reload, closing the tab) with an unsent draft asks first; the draft is kept either way.
    if (!hasContent(values) || sentValues === values) return;
    const warn = (event: BeforeUnloadEvent) => {
      event.preventDefault();
      event.returnValue = "";
    };
    window.addEventListener("beforeunload", warn);
    return () => window.removeEventListener("beforeunload", warn);
  }, [values, sentValues]);
  useEffect(() => {
    // An edit of the draft takes away what was about the example as sent (its verdict and Retract), and the
    // errors of the fields that changed.
    const before = previous.current;
    previous.current = values;
    const changed = Object.keys({ ...before, ...values }).filter((name) => before[name] !== values[name]);
    if (changed.length === 0) return;
    setNearCopy(null);
    if (sent.current && sent.current.values !== values) {
      sent.current = null;
      setVerdict(null);
      setRetracted(false);
      setProblem(null);
    }
    setErrors((shown) => without(shown, changed));
    setProblem((problem) => {
      if (!problem || !changed.some((name) => name in problem.fields)) return problem;
      const fields = without(problem.fields, changed);
      return Object.keys(fields).length ? { ...problem, fields } : null; // every field it named was edited
    });
  }, [values]);
  useEffect(() => {
    // The verdict comes into view (the form can be taller than the window), Retract with it.
    if (!verdict) return;
    const still = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
    verdictArea.current?.scrollIntoView?.({ block: "nearest", behavior: still ? "auto" : "smooth" });
  }, [verdict]);

  // A span is picked by selecting text in the context field it refers to.
  useEffect(() => {
    const spans = inputs.filter((f) => f.type === "SPAN" && f.contextField);
    if (spans.length === 0) return;
    const onSelection = () => {
      const selection = document.getSelection();
      if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return;
      const range = selection.getRangeAt(0);
      for (const field of spans) {
        const element = document.querySelector(`[data-context-field="${CSS.escape(field.contextField ?? "")}"]`);
        const text = element?.firstChild;
        if (!element || !text || range.startContainer !== text || range.endContainer !== text) continue;
        const span = spanFromSelection(text.textContent ?? "", range.startOffset, range.endOffset);
        if (span) setValue(field.name, span);
      }
    };
    document.addEventListener("selectionchange", onSelection);
    return () => document.removeEventListener("selectionchange", onSelection);
  }, [inputs, setValue]);

  async function submit(allowNearDuplicate = false) {
    if (creating.fetching) return;
    setNearCopy(null);
    const built = buildFields(fields, values, labels);
    setErrors(built.errors);
    if (Object.keys(built.errors).length) {
      setProblem({ message: "Some fields need attention.", fields: built.errors });
      return;
    }
    setProblem(null);
    const timeTakenMs = Math.min(Date.now() - started.current, 7 * 24 * 3600 * 1000);
    const target = inputs.find((f) => f.type === "CHOICE" && f.role === "TARGET");
    const said = target ? built.fields[target.name] : undefined;
    sent.current = { values, said: typeof said === "string" ? said : null };
    setVerdict(null);
    setStreaming(null);
    const stream = writes && signedIn ? await openReplyStream() : null;
    const result = await create({
      input: {
        taskCode: code,
        contextId,
        fields: built.fields,
        timeTakenMs,
        tag: contextTag,
        suggestionId: from?.id ?? null,
        replyStream: stream?.id ?? null,
        allowNearDuplicate,
      },
    });
    stream?.close();
    setStreaming(null);
    const answer = result.data?.createExample;
    if (answer?.__typename === "NearDuplicate") {
      setNearCopy({ similarity: answer.similarity, threshold: answer.threshold, yours: !!answer.yourExample });
      return;
    }
    const failed = problemOf(
      result.error,
      answer,
      ["ExampleCreated", "PredictionPending", "VerdictPending"],
      inputs.map((f) => f.name),
    );
    setProblem(failed);
    setErrors(failed?.fields ?? {});
    if (!failed && answer) {
      clearDraft(code, contextId);
      setVerdict(answer);
      setRetracted(false);
      setFrom(null);
      setSuggestRound((n) => n + 1);
      onStored();
    }
  }

  async function doRetract(id: string) {
    const result = await retract({ input: { id } });
    const failed = problemOf(result.error, result.data?.retractExample, "ExampleRetracted");
    setProblem(failed);
    if (!failed) {
      setRetracted(true);
      onStored();
    }
  }

  function onKeyDown(event: React.KeyboardEvent<HTMLFormElement>) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      void submit();
      return;
    }
    // Number keys choose among the first choice field's options, unless the key is typed into a text box.
    const target = event.target as HTMLElement;
    if (/^[1-9]$/.test(event.key) && !event.ctrlKey && !event.altKey && !event.metaKey) {
      if (
        target.tagName === "TEXTAREA" ||
        (target.tagName === "INPUT" && (target as HTMLInputElement).type !== "radio")
      )
        return;
      const choice = inputs.find((f) => f.type === "CHOICE");
      const option = choice && choicesOf(choice, labels)[Number(event.key) - 1];
      if (choice && option) {
        event.preventDefault();
        setValue(choice.name, option);
      }
    }
  }

  function use(suggestion: SuggestionItem) {
    setValues((v) => ({ ...v, ...valuesFromFields(inputs, (suggestion.fields ?? {}) as Record<string, unknown>) }));
    setFrom({ id: suggestion.id, adversary: suggestion.adversary });
    setErrors({});
    setProblem(null);
  }

  const created = verdict?.__typename === "ExampleCreated" ? verdict : null;
  const titles = useMemo(() => choiceTitles(fields), [fields]);
  // The text a span target selects from: the model's span is shown in it.
  const spanField = fields.find((f) => f.role === "TARGET" && f.type === "SPAN");
  const passageValue = spanField?.contextField ? context[spanField.contextField] : undefined;
  const passage = typeof passageValue === "string" ? passageValue : null;
  const pending = verdict?.__typename === "PredictionPending" ? verdict : null;
  const waiting = verdict?.__typename === "VerdictPending" ? verdict : null;
  const exampleId = created?.example.id ?? pending?.example.id ?? waiting?.example.id;
  const stored = created?.example ?? pending?.example ?? waiting?.example;
  const decision = waiting && decided?.id === waiting.example.id ? decided : null;
  const fooledNow = created?.fooled ?? decision?.fooled ?? false;
  const said = sent.current?.said ?? null;

  return (
    <div className="compose">
      <form
        ref={form}
        className="card example-form"
        aria-label="Your example"
        onKeyDown={onKeyDown}
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
        noValidate
      >
        <FieldControls
          fields={inputs}
          labels={labels}
          values={values}
          errors={errors}
          context={context}
          onChange={setValue}
        />
        <div aria-live="polite">
          {from && (
            <p className="from-note small">
              Written from a suggestion by <strong>{from.adversary}</strong>: it counts as assisted.{" "}
              <button type="button" className="link" onClick={() => setFrom(null)}>
                Forget the suggestion
              </button>
            </p>
          )}
        </div>
        {restored && hasContent(restored) && !sent.current && (
          <p className="muted small" data-draft-restored>
            Your unsent draft is back (kept in this browser).
          </p>
        )}
        <ProblemBox problem={problem} />
        {nearCopy && (
          <div role="alert" className="problem near-copy">
            <p>
              <strong>Close to an earlier example.</strong> This is {Math.round(nearCopy.similarity * 100)}% similar to{" "}
              {nearCopy.yours ? "one of your examples" : "an example someone already wrote"} in this round (the task
              flags {Math.round(nearCopy.threshold * 100)}% and more), so it was not stored. Change it, or send it
              anyway: validators will see how close it is.
            </p>
            <button type="button" className="secondary" disabled={creating.fetching} onClick={() => void submit(true)}>
              Send it anyway
            </button>
          </div>
        )}
        <div className="actions">
          <button type="submit" disabled={creating.fetching} aria-keyshortcuts="Control+Enter">
            Submit
          </button>
          <span className="muted small">Ctrl+Enter</span>
        </div>
        {streaming !== null && creating.fetching && (
          <ContentWarning code={code} warning={contentWarning}>
            <div className="prediction streaming" aria-busy="true">
              <p className="small muted">The model is writing…</p>
              <p data-testid="streamed-reply">{streaming}</p>
            </div>
          </ContentWarning>
        )}
        <div ref={verdictArea}>
          <div role="status" className={verdict ? (fooledNow ? "verdict fooled" : "verdict") : "verdict empty"}>
            {created && (
              <>
                <p className="verdict-line">
                  {created.fooled ? "You fooled the model!" : "The model was not fooled."}
                  {retracted ? " (retracted)" : ""}
                </p>
                <ContentWarning code={code} warning={contentWarning}>
                  <Prediction
                    prediction={created.prediction}
                    said={said}
                    titles={titles}
                    passage={passage}
                    explanation={created.example.verdictExplanation}
                  />
                </ContentWarning>
              </>
            )}
            {pending && <p className="verdict-line">Stored. The model has not answered yet: {pending.message}</p>}
            {waiting && (
              <>
                <p className="verdict-line">
                  {decision
                    ? decision.fooled
                      ? "You fooled the model!"
                      : "The model was not fooled."
                    : waiting.decidedBy === "JUDGE"
                      ? "Stored. The task's judge model is deciding whether the model was fooled…"
                      : "Stored. Validators will decide whether the model's answer is wrong; it counts once they do."}
                  {retracted ? " (retracted)" : ""}
                </p>
                <ContentWarning code={code} warning={contentWarning}>
                  {decision?.verdict?.rationale && <p className="small">Judge: {decision.verdict.rationale}</p>}
                  <Prediction prediction={waiting.prediction} said={said} titles={titles} passage={passage} />
                </ContentWarning>
              </>
            )}
            {stored?.source && (
              <p className="small">
                Source: <SourceBadge source={stored.source} adversary={stored.adversary} />
              </p>
            )}
          </div>
          {exampleId && (
            <div className="actions">
              <button
                type="button"
                className="secondary"
                disabled={retracted || retracting.fetching}
                onClick={() => doRetract(exampleId)}
              >
                Retract
              </button>
            </div>
          )}
        </div>
      </form>
      {signedIn && (
        <Suggestions
          key={suggestRound}
          code={code}
          fields={fields}
          labels={labels}
          values={values}
          contextId={contextId}
          chosenId={from?.id ?? null}
          onUse={use}
          onErrors={setErrors}
        />
      )}
    </div>
  );
}

/** The model's answer; ``said``: the label the writer gave, beside the model's and marked among its probabilities;
 * ``titles``: how people read labels; ``passage``: the text a span answer stands in (the model's span is marked in
 * it); ``explanation``: the score and threshold that decided, for a rule that has them. */
function Prediction({
  prediction,
  said = null,
  titles = {},
  passage = null,
  explanation = null,
}: {
  prediction: ShownPredictionFragment;
  said?: string | null;
  titles?: Record<string, string>;
  passage?: string | null;
  explanation?: Explanation | null;
}) {
  const fields = prediction.fields as Record<string, unknown>;
  const texts = Object.values(fields).filter((v): v is string => typeof v === "string");
  const answer = prediction.label
    ? titleOf(titles, prediction.label)
    : (prediction.span?.text ?? (texts.length === 1 ? texts[0] : showValue(fields)));
  const generation = prediction.generation;
  return (
    <div className="prediction">
      <p>
        {said != null && (
          <>
            You said <strong>{titleOf(titles, said)}</strong> ·{" "}
          </>
        )}
        The model answered: <strong>{answer}</strong>
        {prediction.confidence != null && ` (confidence ${percent(prediction.confidence)})`}
      </p>
      {prediction.span && passage && <SpanInPassage passage={passage} span={prediction.span} />}
      {explanation && <p className="small explanation">{explainVerdict(explanation)}</p>}
      {generation && (
        <p className="small muted">
          {generation.tokens ?? "?"} tokens; first token after{" "}
          {generation.timeToFirstTokenMs != null ? `${Math.round(generation.timeToFirstTokenMs)} ms` : "?"}
        </p>
      )}
      {prediction.probabilities && (
        <ul className="probabilities" aria-label="The model's probabilities">
          {prediction.probabilities.map((p) => (
            <li key={p.label} className={p.label === said ? "yours" : undefined}>
              <span className="prob-label">
                {titleOf(titles, p.label)}
                {p.label === said && <span className="tag"> yours</span>}
              </span>
              <span className="bar" aria-hidden="true">
                <span style={{ inlineSize: `${Math.round(p.probability * 100)}%` }} />
              </span>
              <span className="prob-value">{percent(p.probability)}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The passage around the model's span, the span marked (``start`` counts characters, i.e. code points). */
function SpanInPassage({ passage, span }: { passage: string; span: { text: string; start: number } }) {
  const chars = [...passage];
  const end = span.start + [...span.text].length;
  if (chars.slice(span.start, end).join("") !== span.text) return null;
  // About 80 characters each side, cut at a space so that no word is halved.
  let before = chars.slice(Math.max(0, span.start - 80), span.start).join("");
  if (span.start > 80) before = before.slice(before.indexOf(" ") + 1);
  let after = chars.slice(end, end + 80).join("");
  if (end + 80 < chars.length && after.includes(" ")) after = after.slice(0, after.lastIndexOf(" "));
  return (
    <p className="small span-in-passage">
      Where the model found it: {span.start > 80 ? "…" : ""}
      {before}
      <mark>{span.text}</mark>
      {after}
      {end + 80 < chars.length ? "…" : ""}
    </p>
  );
}
