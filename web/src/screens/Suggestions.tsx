// Suggestions beside the annotation form: machine adversaries propose small edits of the draft that fool the round's
// target (Mutation.suggestEdits); the annotator reads how each moves the model's probabilities and may put one in
// the form ("Use this"), which then counts as ASSISTED when submitted.
import { useMemo, useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import type { SuggestEditsMutation } from "../gql/graphql";
import { type Problem, problemOf } from "../lib/errors";
import { buildFields, type FieldDescriptor, type FormValues, fieldTitle, formFields, showValue } from "../lib/fields";
import {
  type DiffPart,
  diffWords,
  draftReady,
  formatMove,
  orderMoves,
  probability,
  valuesFromFields,
} from "../lib/suggestions";
import { ProblemBox } from "./Form";

const SuggestAdversaries = graphql(`
  query SuggestAdversaries($code: String!) {
    task(code: $code) {
      id
      adversaries {
        name
        description
        assists
        available
      }
    }
  }
`);

const SuggestEdits = graphql(`
  mutation SuggestEdits($input: SuggestEditsInput!) {
    suggestEdits(input: $input) {
      __typename
      ... on EditsSuggested {
        adversaries
        queries
        draft {
          fooled
          goldProbability
          prediction {
            label
            span {
              text
            }
            fields
          }
        }
        suggestions {
          id
          adversary
          fields
          draft
          edits
          rationale
          createdAt
          verdict {
            fooled
            goldProbability
            prediction {
              label
              span {
                text
              }
              fields
            }
          }
          moves {
            label
            before
            after
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

type Found = Extract<SuggestEditsMutation["suggestEdits"], { __typename: "EditsSuggested" }>;
export type SuggestionItem = Found["suggestions"][number];
type Verdict = Found["draft"];

/** What the target answered, in words: a label, a span's text, or its fields. */
function answerOf(prediction: Verdict["prediction"]): string {
  return prediction.label ?? prediction.span?.text ?? showValue(prediction.fields);
}

export function Suggestions({
  code,
  fields,
  labels,
  values,
  contextId,
  chosenId,
  onUse,
  onErrors,
}: {
  code: string;
  fields: readonly FieldDescriptor[];
  labels: readonly string[];
  values: FormValues;
  contextId: string | null;
  /** The suggestion now in the form, if any. */
  chosenId: string | null;
  onUse: (suggestion: SuggestionItem) => void;
  /** Sentences about the form's fields (the draft breaks a rule), to show beside them as a submission's are. */
  onErrors: (errors: Record<string, string>) => void;
}) {
  const [adversaries] = useQuery({ query: SuggestAdversaries, variables: { code } });
  const [asking, ask] = useMutation(SuggestEdits);
  const [adversary, setAdversary] = useState("");
  const [found, setFound] = useState<Found | null>(null);
  const [askedFor, setAskedFor] = useState<string | null>(null);
  // The draft as "Use this" left it: a draft that only took a suggestion is not one that changed since asking.
  const [usedKey, setUsedKey] = useState<string | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const shown = useMemo(() => formFields(fields), [fields]);
  const helpers = (adversaries.data?.task?.adversaries ?? []).filter((a) => a.assists && a.available);
  const ready = draftReady(fields, values);
  const draft = useMemo(() => buildFields(fields, values, labels), [fields, values, labels]);
  const draftKey = JSON.stringify(draft.fields);
  const keyOf = (v: FormValues) => JSON.stringify(buildFields(fields, v, labels).fields);
  const needed = shown
    .filter((f) => (f.role === "INPUT" || f.role === "TARGET") && f.required)
    .map((f) => fieldTitle(f.name));

  if (adversaries.data && helpers.length === 0) return null; // no adversary can help here: nothing to offer

  async function suggest() {
    if (asking.fetching) return;
    onErrors(draft.errors);
    if (Object.keys(draft.errors).length) {
      setProblem({ message: "Some fields need attention before asking for edits.", fields: draft.errors });
      return;
    }
    setProblem(null);
    setFound(null);
    const result = await ask({
      input: { taskCode: code, draft: draft.fields, contextId, adversary: adversary || null, limit: 3 },
    });
    const answer = result.data?.suggestEdits;
    const failed = problemOf(
      result.error,
      answer,
      "EditsSuggested",
      shown.map((f) => f.name),
    );
    setProblem(failed);
    onErrors(failed?.fields ?? {});
    if (!failed && answer?.__typename === "EditsSuggested") {
      setFound(answer);
      setAskedFor(draftKey);
    }
  }

  const chosen = helpers.find((a) => a.name === adversary);
  const stale = found !== null && askedFor !== draftKey && usedKey !== draftKey;
  return (
    <section className="card suggest" aria-labelledby="suggest-title">
      <h2 id="suggest-title">Suggestions</h2>
      <p className="hint">
        A machine adversary looks for small edits of your draft that fool the model. Use one, change it or ignore it; an
        example written from one counts as assisted.
      </p>
      {helpers.length > 1 && (
        <div className="control">
          <label htmlFor="suggest-adversary">Adversary</label>
          <select id="suggest-adversary" value={adversary} onChange={(e) => setAdversary(e.currentTarget.value)}>
            <option value="">All available ({helpers.length})</option>
            {helpers.map((a) => (
              <option key={a.name} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
          {chosen && <p className="hint small">{chosen.description}</p>}
        </div>
      )}
      <div className="actions">
        <button
          type="button"
          className="secondary"
          disabled={!ready || asking.fetching}
          aria-describedby={ready ? undefined : "suggest-needs"}
          onClick={() => void suggest()}
        >
          {asking.fetching ? "Looking for edits…" : "Suggest edits"}
        </button>
        {!ready && (
          <span className="muted small" id="suggest-needs">
            Fill in {needed.join(" and ") || "your example"} first.
          </span>
        )}
      </div>
      <ProblemBox problem={problem} />
      <div aria-live="polite" className="suggest-status">
        {asking.fetching && (
          <p className="muted">
            <span className="spinner" aria-hidden="true" /> Asking the adversaries; this can take several seconds…
          </p>
        )}
        {found && !asking.fetching && <Outcome found={found} stale={stale} />}
      </div>
      {found && found.suggestions.length > 0 && (
        <ol className="suggestions" aria-label="Suggested edits">
          {found.suggestions.map((s, i) => (
            <SuggestionCard
              key={s.id}
              suggestion={s}
              index={i + 1}
              fields={shown}
              chosen={s.id === chosenId}
              onUse={() => {
                setUsedKey(
                  keyOf({ ...values, ...valuesFromFields(fields, (s.fields ?? {}) as Record<string, unknown>) }),
                );
                onUse(s);
              }}
            />
          ))}
        </ol>
      )}
    </section>
  );
}

/** The answer in a sentence or two: the draft already fools the model, nothing found, or how many were. */
function Outcome({ found, stale }: { found: Found; stale: boolean }) {
  const draft = found.draft;
  const gold = draft.goldProbability == null ? "" : ` (your gold ${probability(draft.goldProbability)})`;
  const asked = found.adversaries.join(", ") || "no adversary";
  return (
    <>
      {draft.fooled ? (
        <p className="suggest-outcome fooled">
          Your draft already fools the model: it predicts <strong>{answerOf(draft.prediction)}</strong>
          {gold}. Submit it as it is.
        </p>
      ) : found.suggestions.length === 0 ? (
        <p className="suggest-outcome">
          No edit found within the budget ({asked}; {found.queries} questions to the model). Reword your draft, or try
          another adversary.
        </p>
      ) : (
        <p className="suggest-outcome">
          {found.suggestions.length === 1 ? "One suggestion" : `${found.suggestions.length} suggestions`} from {asked}.
          For your draft the model predicts <strong>{answerOf(draft.prediction)}</strong>
          {gold}.
        </p>
      )}
      {stale && <p className="small muted">Your draft has changed since; ask again for edits of it.</p>}
    </>
  );
}

function SuggestionCard({
  suggestion,
  index,
  fields,
  chosen,
  onUse,
}: {
  suggestion: SuggestionItem;
  index: number;
  fields: readonly FieldDescriptor[];
  chosen: boolean;
  onUse: () => void;
}) {
  const now = (suggestion.fields ?? {}) as Record<string, unknown>;
  const before = (suggestion.draft ?? {}) as Record<string, unknown>;
  // Inputs always; the gold and the rest only when the suggestion changes them.
  const rows = fields.filter(
    (f) => f.name in now && (f.role === "INPUT" || showValue(now[f.name]) !== showValue(before[f.name])),
  );
  const gold = fields.find((f) => f.role === "TARGET" && f.type === "CHOICE");
  const predicted = suggestion.verdict.prediction.label;
  const moves = orderMoves(suggestion.moves, gold ? showValue(now[gold.name]) : null, predicted);
  return (
    <li className={chosen ? "suggestion chosen" : "suggestion"} data-suggestion={suggestion.id}>
      <p className="suggestion-head small">
        <span className="chip">{suggestion.adversary}</span>
        {chosen && <span className="chip in-form">in the form</span>}
      </p>
      <dl className="example">
        {rows.map((f) => (
          <div key={f.name} className={`role-${f.role.toLowerCase()}`}>
            <dt>{fieldTitle(f.name)}</dt>
            <dd>
              <Diff parts={diffWords(showValue(before[f.name]), showValue(now[f.name]))} />
            </dd>
          </div>
        ))}
      </dl>
      <p className="suggestion-verdict">
        The model predicts <strong>{answerOf(suggestion.verdict.prediction)}</strong>
        {suggestion.verdict.fooled ? " (fooled)" : ""}
      </p>
      {moves.length > 0 && (
        <ul className="moves" aria-label={`How the probabilities moved, suggestion ${index}`}>
          {moves.map((m) => (
            <li key={m.label} className={m.after < m.before ? "down" : m.after > m.before ? "up" : undefined}>
              {formatMove(m)}
            </li>
          ))}
        </ul>
      )}
      <p className="rationale small">
        <span className="muted">Why, by {suggestion.adversary}:</span> {suggestion.rationale}
      </p>
      <button type="button" className="secondary" onClick={onUse}>
        Use this<span className="sr"> suggestion ({index})</span>
      </button>
    </li>
  );
}

/** A diff as text: removed runs struck through, added ones marked (screen readers hear which is which). */
export function Diff({ parts }: { parts: readonly DiffPart[] }) {
  return (
    <>
      {parts.map((part, i) =>
        part.kind === "same" ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one diff never move
          <span key={i}>{part.text}</span>
        ) : part.kind === "removed" ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one diff never move
          <del key={i}>{part.text}</del>
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one diff never move
          <ins key={i}>{part.text}</ins>
        ),
      )}
    </>
  );
}
