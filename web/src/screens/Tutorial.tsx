// A task's tutorial, in place of the annotate form or the validation queue until the person passes: one decided
// example at a time, "is its label right?", the verdict and the owners' reason at once, then the score.
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../gql";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import { fieldTitle, showValue } from "../lib/fields";
import { ContentWarning } from "./ContentWarning";
import { ProblemBox } from "./Form";

export const TutorialStatus = graphql(`
  query TutorialStatus($code: String!) {
    task(code: $code) {
      id
      tutorial {
        passMark
        required
        passed
        total
        answered
        correct
        score
        attempts
        items {
          exampleId
          fields
          context
          modelAnswer {
            label
            span {
              text
            }
            fields
          }
          yourAnswer
          expected
          explanation
          correct
        }
      }
    }
  }
`);

const Answer = graphql(`
  mutation AnswerTutorial($input: AnswerTutorialInput!) {
    answerTutorial(input: $input) {
      __typename
      ... on TutorialAnswered {
        item {
          exampleId
          yourAnswer
          expected
          explanation
          correct
        }
        tutorial {
          answered
          correct
          score
          passed
          required
          attempts
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const Restart = graphql(`
  mutation RestartTutorial($input: RestartTutorialInput!) {
    restartTutorial(input: $input) {
      __typename
      ... on Error {
        message
      }
    }
  }
`);

const pct = (n: number | null | undefined) => (n == null ? "–" : `${Math.round(n * 100)}%`);

/** The tutorial of task ``code``; ``what`` says what waits for it ("write examples", "validate"). */
export function Tutorial({
  code,
  what,
  warning,
  onPassed,
}: {
  code: string;
  what: string;
  /** The task's content warning: its examples show once accepted, as everywhere else. */
  warning: string | null;
  onPassed: () => void;
}) {
  const [{ data, error }, refresh] = useQuery({ query: TutorialStatus, variables: { code } });
  const [answering, answer] = useMutation(Answer);
  const [restarting, restart] = useMutation(Restart);
  const [problem, setProblem] = useState<Problem | null>(null);
  // The item just answered, shown with its verdict until "Next".
  const [shown, setShown] = useState<string | null>(null);
  const tutorial = data?.task?.tutorial;
  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (!tutorial) return <p className="muted">Loading the tutorial…</p>;
  const items = tutorial.items;
  const current = items.find((i) => i.exampleId === shown) ?? items.find((i) => i.yourAnswer == null) ?? null;
  const finished = tutorial.answered === tutorial.total;

  async function send(exampleId: string, label: "CORRECT" | "INCORRECT") {
    const result = await answer({ input: { exampleId, label } });
    const failed = problemOf(result.error, result.data?.answerTutorial, "TutorialAnswered");
    setProblem(failed);
    if (!failed) {
      setShown(exampleId);
      refresh({ requestPolicy: "network-only" });
    }
  }

  async function again() {
    const result = await restart({ input: { taskCode: code } });
    const failed = problemOf(result.error, result.data?.restartTutorial, "TutorialRestarted");
    setProblem(failed);
    setShown(null);
    if (!failed) refresh({ requestPolicy: "network-only" });
  }

  return (
    <section className="card tutorial" aria-labelledby="tutorial-title">
      <h2 id="tutorial-title">Tutorial</h2>
      <p>
        Before you {what} here, practise on examples the task&rsquo;s owners have already decided: say whether each
        one&rsquo;s label is right. You need {pct(tutorial.passMark)} to pass; practice is never counted.
      </p>
      <p className="muted small" data-tutorial-progress>
        {tutorial.answered} of {tutorial.total} answered · {tutorial.correct} right
        {tutorial.attempts ? ` · ${tutorial.attempts} earlier attempt${tutorial.attempts === 1 ? "" : "s"}` : ""}
      </p>
      {current && (
        <article aria-label="Tutorial example">
          <ContentWarning code={code} warning={warning}>
            <dl className="example">
              {Object.entries({
                ...((current.context as Record<string, unknown>) ?? {}),
                ...((current.fields as Record<string, unknown>) ?? {}),
              }).map(([name, value]) => (
                <div key={name}>
                  <dt>{fieldTitle(name)}</dt>
                  <dd>{showValue(value)}</dd>
                </div>
              ))}
              {current.modelAnswer && (
                <div>
                  <dt>The model answered</dt>
                  <dd>
                    {current.modelAnswer.label ??
                      current.modelAnswer.span?.text ??
                      showValue(current.modelAnswer.fields)}
                  </dd>
                </div>
              )}
            </dl>
          </ContentWarning>
          {current.yourAnswer == null ? (
            <p className="actions">
              <button type="button" disabled={answering.fetching} onClick={() => send(current.exampleId, "CORRECT")}>
                The label is right
              </button>
              <button
                type="button"
                className="secondary"
                disabled={answering.fetching}
                onClick={() => send(current.exampleId, "INCORRECT")}
              >
                The label is wrong
              </button>
            </p>
          ) : (
            <div role="status" className={current.correct ? "notice" : "problem"}>
              <p>
                <strong>{current.correct ? "Right." : "Not quite."}</strong> A careful validator says the label is{" "}
                {current.expected === "CORRECT" ? "right" : "wrong"}.
                {current.explanation ? ` ${current.explanation}` : ""}
              </p>
              {!finished && (
                <button type="button" onClick={() => setShown(null)}>
                  Next example
                </button>
              )}
            </div>
          )}
        </article>
      )}
      {finished && (
        <div aria-live="polite">
          {tutorial.passed ? (
            <p className="notice">
              <strong>Passed</strong> with {pct(tutorial.score)}.{" "}
              <button type="button" onClick={onPassed}>
                Start to {what}
              </button>
            </p>
          ) : (
            <p className="problem">
              You scored {pct(tutorial.score)}; the pass mark is {pct(tutorial.passMark)}.{" "}
              <button type="button" disabled={restarting.fetching} onClick={() => void again()}>
                Try again
              </button>
            </p>
          )}
        </div>
      )}
      <ProblemBox problem={problem} />
    </section>
  );
}
