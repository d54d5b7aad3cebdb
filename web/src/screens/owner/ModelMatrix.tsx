// The round x model matrix: every registered model of the task (oldest first) on each round's test set, with the
// principal metric and the fooling rate and their intervals, and where each model came from; a model that the
// current round does not target is promoted to target the next one (openNextRound(candidate:)) after a confirmation.
import { useEffect, useRef, useState } from "react";
import { useMutation, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type {
  MatrixEvaluationsSubscription,
  RegisteredModelPartsFragment,
  RetrainingRegistryQuery,
} from "../../gql/graphql";
import { problemOf } from "../../lib/errors";
import { currentOf, type Latest, useEnded, withLatest } from "../../lib/live";
import { estimateText, lineageText, originLabels, originWords, roundsText, trainedFrom } from "../../lib/retraining";
import { submitted } from "../Form";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { Checkbox, Outcome, shortWhen, TextArea, useOutcome } from "./parts";
import { Digest } from "./registry";

export const Registry = graphql(`
  query RetrainingRegistry($code: String!) {
    task(code: $code) {
      id
      updatesCursor
      registeredModels {
        ...RegisteredModelParts
      }
      roundModelMatrix {
        metric
        rounds
        rows {
          model {
            ...RegisteredModelParts
          }
          targetedRounds
          cells {
            roundNumber
            dataset {
              id
              name
            }
            evaluation {
              id
              status
            }
            metric {
              value
              low
              high
            }
            foolingRate {
              value
              low
              high
            }
            items
          }
        }
      }
    }
  }
`);

// The task's evaluations as they change, while the matrix waits for some: one that ends reloads the matrix.
const MatrixEvaluations = graphql(`
  subscription MatrixEvaluations($code: String!, $after: String) {
    evaluationUpdated(taskCode: $code, after: $after) {
      cursor
      evaluation {
        id
        status
        progress
      }
    }
  }
`);

const Promote = graphql(`
  mutation PromoteRegisteredModel($input: OpenNextRoundInput!) {
    openNextRound(input: $input) {
      __typename
      ... on RoundOpened {
        round {
          id
          number
          startedAt
          endedAt
          targetModels {
            name
            backend
            config
            registered {
              ...RegisteredModelParts
            }
          }
        }
        previous {
          id
          number
          endedAt
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
    }
  }
`);

type MatrixEvaluation = MatrixEvaluationsSubscription["evaluationUpdated"]["evaluation"];
type Entry = RegisteredModelPartsFragment;
type MatrixRow = NonNullable<NonNullable<RetrainingRegistryQuery["task"]>["roundModelMatrix"]>["rows"][number];
type Cell = MatrixRow["cells"][number];

function CellView({ cell, metric }: { cell: Cell | undefined; metric: string }) {
  if (cell?.metric || cell?.foolingRate)
    return (
      <>
        <span className="estimate" data-metric>
          {metric} {estimateText(cell.metric)}
        </span>
        <span className="estimate" data-fooling>
          fooled {estimateText(cell.foolingRate)}
        </span>
        <span className="muted small block">{cell.items} items</span>
      </>
    );
  const status = cell?.evaluation?.status;
  const note =
    status === "QUEUED" || status === "RUNNING"
      ? "evaluating"
      : status === "FAILED"
        ? "evaluation failed"
        : status === "DONE"
          ? "no figures"
          : "not evaluated";
  return (
    <>
      <span aria-hidden="true">—</span>
      <span className="muted small block">{note}</span>
    </>
  );
}

export function ModelMatrix({
  task,
  data,
  error,
  reload,
  onPromoted,
}: {
  task: ManagedTask;
  data: RetrainingRegistryQuery | undefined;
  error: string;
  reload: () => void;
  onPromoted: () => void;
}) {
  const [promoting, setPromoting] = useState<Entry | null>(null);
  const promoted = useOutcome();
  const matrix = data?.task?.roundModelMatrix;
  const rowsByModel = new Map((matrix?.rows ?? []).map((row) => [row.model.id, row]));
  // Every registered model, oldest first (the registry lists the newest first), with its matrix row if evaluated.
  const entries: Entry[] = [...(data?.task?.registeredModels ?? [])].reverse();
  for (const row of matrix?.rows ?? []) if (!entries.some((e) => e.id === row.model.id)) entries.push(row.model);
  const rounds = matrix?.rounds ?? [];
  const testSet = (n: number) =>
    matrix?.rows.flatMap((r) => r.cells).find((c) => c.roundNumber === n)?.dataset.name ?? `r${n}-test`;
  const current = task.currentRound;
  const currentIds = new Set((current?.targetModels ?? []).flatMap((t) => (t.registered ? [t.registered.id] : [])));
  const isCurrent = (e: Entry) => currentIds.has(e.id) || (current != null && e.rounds.includes(current.number));
  const evaluating = (matrix?.rows ?? []).some((r) =>
    r.cells.some((c) => c.evaluation?.status === "QUEUED" || c.evaluation?.status === "RUNNING"),
  );
  const cursor = data?.task?.updatesCursor;
  const [live] = useSubscription<MatrixEvaluationsSubscription, Latest<MatrixEvaluation>>(
    { query: MatrixEvaluations, variables: { code: task.code, after: cursor }, pause: !cursor || !evaluating },
    (latest = new Map(), event) => withLatest(latest, event.evaluationUpdated.evaluation),
  );
  const cellEvaluations = (matrix?.rows ?? []).flatMap((r) =>
    r.cells.flatMap((c) => (c.evaluation ? [c.evaluation] : [])),
  );
  useEnded(currentOf(cellEvaluations, live.data), reload);

  return (
    <section aria-labelledby="matrix-title">
      <h3 id="matrix-title">Round × model matrix</h3>
      <p className="small">
        Every registered model on each round's test set: {matrix ? matrix.metric : "the task's principal metric"} and
        the fooling rate (the share of the set's examples that fool it, the vMER that round would have had), each with
        its 95% interval; — until evaluated. Candidates and the models they were trained from are evaluated once a
        training job succeeds.
      </p>
      {error && <p role="alert">{error}</p>}
      {matrix && rounds.length === 0 && (
        <p className="muted">
          No round has a test set yet:{" "}
          <Link href={`/tasks/${encodeURIComponent(task.code)}/manage/datasets`}>make a round's data sets</Link> to
          compare the models on it.
        </p>
      )}
      {data && entries.length === 0 && <p className="muted">The task's model registry is empty.</p>}
      {entries.length > 0 && (
        <ScrollBox label="Round × model matrix, scrollable">
          <table className="table matrix">
            <caption>Registered models on each round's test set</caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Origin</th>
                <th scope="col">Parent</th>
                <th scope="col">Recipe</th>
                <th scope="col">Targeted</th>
                {rounds.map((n) => (
                  <th scope="col" key={n} className="round">
                    Round {n}
                    <span className="muted small block">{testSet(n)}</span>
                  </th>
                ))}
                <th scope="col">Next round</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => {
                const row = rowsByModel.get(entry.id);
                const from = entry.origin === "TRAINED" ? trainedFrom(entry.trainingData) : "";
                return (
                  <tr key={entry.id} data-registered={entry.id}>
                    <th scope="row">
                      {entry.name}
                      <span className="small block">
                        <Digest weights={entry.weights} />
                      </span>
                      <span className="muted small block">registered {shortWhen(entry.createdAt)}</span>
                    </th>
                    <td>
                      {originLabels[entry.origin]}
                      {from && <span className="small block">{from}</span>}
                    </td>
                    <td>
                      {entry.parent ? (
                        <>
                          {entry.parent.name}
                          <span className="small block">
                            <Digest weights={entry.parent.weights} />
                          </span>
                        </>
                      ) : (
                        <span className="muted">none</span>
                      )}
                    </td>
                    <td>
                      {entry.recipe ?? <span className="muted">none</span>}
                      {entry.seed != null && <span className="muted small block">seed {entry.seed}</span>}
                    </td>
                    <td>{roundsText(row?.targetedRounds ?? entry.rounds)}</td>
                    {rounds.map((n) => (
                      <td key={n} className="round">
                        <CellView cell={row?.cells.find((c) => c.roundNumber === n)} metric={matrix?.metric ?? ""} />
                      </td>
                    ))}
                    <td>
                      {isCurrent(entry) ? (
                        <span className="small">Round {current?.number}'s target</span>
                      ) : (
                        <button type="button" className="secondary" onClick={() => setPromoting(entry)}>
                          Promote to next round
                          <span className="sr">
                            {" "}
                            ({entry.name}, {originWords[entry.origin]})
                          </span>
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </ScrollBox>
      )}
      <Outcome outcome={promoted} />
      <PromoteDialog
        task={task}
        entry={promoting}
        onClose={() => setPromoting(null)}
        onDone={(message) => {
          setPromoting(null);
          promoted.succeed(message);
          onPromoted();
        }}
      />
    </section>
  );
}

function PromoteDialog({
  task,
  entry,
  onClose,
  onDone,
}: {
  task: ManagedTask;
  entry: Entry | null;
  onClose: () => void;
  onDone: (message: string) => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (entry && !element.open) element.showModal();
    if (!entry && element.open) element.close();
  }, [entry]);
  return (
    <dialog ref={dialog} className="promote" aria-labelledby="promote-title" onClose={onClose}>
      {entry && <PromoteForm key={entry.id} task={task} entry={entry} onClose={onClose} onDone={onDone} />}
    </dialog>
  );
}

/** The confirmation: the next round's description and contexts, then openNextRound(candidate:). */
function PromoteForm({
  task,
  entry,
  onClose,
  onDone,
}: {
  task: ManagedTask;
  entry: Entry;
  onClose: () => void;
  onDone: (message: string) => void;
}) {
  const [opening, open] = useMutation(Promote);
  const outcome = useOutcome();
  const current = task.currentRound;
  const next = (current?.number ?? 0) + 1;

  async function promote(form: FormData) {
    const result = await open({
      input: {
        taskCode: task.code,
        candidate: entry.id,
        description: String(form.get("description") ?? ""),
        copyContexts: form.get("copy") === "on",
      },
    });
    const answer = result.data?.openNextRound;
    const problem = problemOf(result.error, answer, "RoundOpened");
    if (problem) return outcome.fail(problem.message);
    const number = answer?.__typename === "RoundOpened" ? answer.round.number : next;
    onDone(`Round ${number} is open, targeting ${entry.name} (${lineageText(entry)}).`);
  }

  return (
    <form onSubmit={submitted(promote)}>
      <h3 id="promote-title">
        Promote {entry.name} to round {next}?
      </h3>
      <p>
        {current && !current.endedAt ? `Round ${current.number} closes and round` : "Round"} {next} opens with{" "}
        {entry.name} as its only target: {lineageText(entry)}, weights <Digest weights={entry.weights} />.
      </p>
      <TextArea label={`Description of round ${next}`} id="promote-description" name="description" maxLength={5000} />
      <Checkbox
        label={`Copy round ${current?.number ?? next - 1}'s contexts into round ${next}`}
        id="promote-copy"
        name="copy"
        defaultChecked
      />
      <p className="actions">
        <button type="submit" disabled={opening.fetching}>
          Open round {next} with {entry.name}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Keep round {current?.number ?? "as it is"}
        </button>
      </p>
      <Outcome outcome={outcome} />
    </form>
  );
}
