// The round x model matrix: every registered model of the task (oldest first) on each round's test set, with the
// principal metric and the fooling rate and their intervals, and where each model came from; a model that the
// current round does not target is promoted to target the next one (openNextRound(candidate:)) after a confirmation.
import { useEffect, useRef, useState } from "react";
import { useClient, useMutation, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type {
  MatrixEvaluationsSubscription,
  PairedTestQuery,
  RegisteredModelPartsFragment,
  RetrainingRegistryQuery,
} from "../../gql/graphql";
import { problemOf } from "../../lib/errors";
import { currentOf, type Latest, useEnded, withLatest } from "../../lib/live";
import { estimateText, lineageText, originLabels, originWords, roundsText, trainedFrom } from "../../lib/retraining";
import { submitted } from "../Form";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { Checkbox, Outcome, Select, shortWhen, TextArea, useOutcome } from "./parts";
import { Digest } from "./registry";

/** How many registered models the registry lists: the newest (the rest are counted). */
export const REGISTRY_SHOWN = 100;

export const Registry = graphql(`
  query RetrainingRegistry($code: String!, $registered: Int!) {
    task(code: $code) {
      id
      updatesCursor
      registeredModels(first: $registered) {
        totalCount
        nodes {
          ...RegisteredModelParts
        }
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
            stillFooled {
              value
              low
              high
            }
            stillFooledItems
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

// Two models on one round's test set, item by item: McNemar's exact test and a paired bootstrap.
const PairedTest = graphql(`
  query PairedTest($code: String!, $model: ID!, $against: ID!, $dataset: ID!) {
    task(code: $code) {
      id
      pairedTest(model: $model, against: $against, dataset: $dataset) {
        items
        bothRight
        onlyModelRight
        onlyAgainstRight
        bothWrong
        mcnemarPValue
        metric
        modelValue
        againstValue
        difference {
          value
          low
          high
        }
        bootstrapPValue
        resamples
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
        {cell.stillFooled && (
          <span className="estimate" data-still-fooled>
            still fooled {estimateText(cell.stillFooled)}
          </span>
        )}
        <span className="muted small block">
          {cell.items} items
          {cell.stillFooled ? `, ${cell.stillFooledItems} of them fooled round ${cell.roundNumber}'s target` : ""}
        </span>
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
  // The newest registered models, shown oldest first (the registry lists the newest first), with their matrix rows.
  const entries: Entry[] = [...(data?.task?.registeredModels?.nodes ?? [])].reverse();
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
        Every registered model on each round's test set: {matrix ? matrix.metric : "the task's principal metric"}, the
        fooling rate (the share of the set's examples that fool it, the vMER that round would have had) and, among the
        examples that fooled the round's target when they were written, the share that still fool it, each with its 95%
        interval; — until evaluated. Candidates and the models they were trained from are evaluated once a training job
        succeeds.
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
      {(data?.task?.registeredModels?.totalCount ?? 0) > REGISTRY_SHOWN && (
        <p className="muted">
          The newest {REGISTRY_SHOWN} of {data?.task?.registeredModels?.totalCount} registered models are listed.
        </p>
      )}
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
                  <tr key={entry.id} data-registered={entry.id} data-parent={entry.parent?.id}>
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
      {matrix && rounds.length > 0 && (matrix.rows.length ?? 0) > 1 && (
        <ComparePanel task={task} rows={matrix.rows} rounds={rounds} testSet={testSet} />
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

type Paired = NonNullable<NonNullable<PairedTestQuery["task"]>["pairedTest"]>;

const pText = (p: number) => (p < 0.001 ? "< 0.001" : p.toFixed(3));

/** Two evaluated models on one round's test set: is the gap between them more than chance? */
function ComparePanel({
  task,
  rows,
  rounds,
  testSet,
}: {
  task: ManagedTask;
  rows: readonly MatrixRow[];
  rounds: readonly number[];
  testSet: (n: number) => string;
}) {
  const client = useClient();
  const evaluated = rows.filter((r) => r.model.model);
  const [model, setModel] = useState(evaluated[evaluated.length - 1]?.model.id ?? "");
  const [against, setAgainst] = useState(evaluated[0]?.model.id ?? "");
  const [round, setRound] = useState(rounds[rounds.length - 1] ?? 0);
  const [result, setResult] = useState<{ test: Paired; names: [string, string] } | null>(null);
  const outcome = useOutcome();
  const [busy, setBusy] = useState(false);
  const byId = new Map(evaluated.map((r) => [r.model.id, r]));

  async function compare() {
    const first = byId.get(model);
    const second = byId.get(against);
    const dataset = first?.cells.find((c) => c.roundNumber === round)?.dataset.id;
    if (!first?.model.model || !second?.model.model || !dataset) return outcome.fail("Choose two evaluated models.");
    if (first.model.id === second.model.id) return outcome.fail("Choose two different models.");
    setBusy(true);
    setResult(null);
    const answer = await client
      .query(
        PairedTest,
        { code: task.code, model: first.model.model.id, against: second.model.model.id, dataset },
        { requestPolicy: "network-only" },
      )
      .toPromise();
    setBusy(false);
    const test = answer.data?.task?.pairedTest;
    if (!test) return outcome.fail(answer.error?.graphQLErrors[0]?.message ?? "The comparison failed.");
    outcome.succeed("");
    setResult({ test, names: [first.model.name, second.model.name] });
  }

  return (
    <section aria-labelledby="compare-title" className="compare">
      <h4 id="compare-title">Compare two models item by item</h4>
      <p className="small">
        On every item of a round's test set (its held-out part included, so there may be more items than the matrix
        shows): McNemar's exact test on which items each got right, and a paired bootstrap of the gap in the principal
        metric. A p-value under 0.05 says a gap that large would rarely come from chance alone.
      </p>
      <div className="row">
        <Select label="Model" id="compare-model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
          {evaluated.map((r) => (
            <option key={r.model.id} value={r.model.id}>
              {r.model.name}
            </option>
          ))}
        </Select>
        <Select
          label="Against"
          id="compare-against"
          value={against}
          onChange={(e) => setAgainst(e.currentTarget.value)}
        >
          {evaluated.map((r) => (
            <option key={r.model.id} value={r.model.id}>
              {r.model.name}
            </option>
          ))}
        </Select>
        <Select
          label="Test set"
          id="compare-round"
          value={String(round)}
          onChange={(e) => setRound(Number(e.currentTarget.value))}
        >
          {rounds.map((n) => (
            <option key={n} value={n}>
              Round {n} ({testSet(n)})
            </option>
          ))}
        </Select>
      </div>
      <p className="actions">
        <button type="button" onClick={compare} disabled={busy}>
          {busy ? "Comparing…" : "Compare"}
        </button>
      </p>
      <Outcome outcome={outcome} />
      {result && <PairedResult test={result.test} names={result.names} />}
    </section>
  );
}

function PairedResult({ test, names }: { test: Paired; names: [string, string] }) {
  const [first, second] = names;
  const { difference: d } = test;
  const significant = test.mcnemarPValue < 0.05;
  return (
    <div data-paired aria-live="polite">
      <p>
        <strong>{significant ? "The gap is unlikely to be chance" : "No significant difference"}</strong> (McNemar p ={" "}
        {pText(test.mcnemarPValue)}, {test.items} items).
      </p>
      <ul className="small">
        <li>
          {test.onlyModelRight} items only {first} got right, {test.onlyAgainstRight} only {second}; both right on{" "}
          {test.bothRight}, both wrong on {test.bothWrong}.
        </li>
        <li>
          {test.metric}: {first} {test.modelValue.toFixed(3)}, {second} {test.againstValue.toFixed(3)}; difference{" "}
          {estimateText(d)} (paired bootstrap, {test.resamples} resamples, p = {pText(test.bootstrapPValue)}).
        </li>
      </ul>
    </div>
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
