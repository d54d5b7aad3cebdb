// One model: its card, its evaluations kept current by evaluationUpdated (from the page's cursor on), results
// per data set (metrics with intervals, fairness slices with their gaps, perturbed copies with their consistency),
// publish / unpublish and delete for its submitter.
import { useState } from "react";
import { useMutation, useQuery, useSubscription } from "urql";
import { Link, useLocation } from "wouter";
import { graphql } from "../gql";
import type { EvaluationPartsFragment, ModelEvaluationsSubscription } from "../gql/graphql";
import { useAuth } from "../lib/auth";
import { downloadWithToken } from "../lib/download";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import { percent } from "../lib/format";
import { currentOf, type Latest, useEnded, withLatest } from "../lib/live";
import { doneCount, evaluationStatusWords, intervalText, metricValue, modelStatusWords } from "../lib/models";
import { ProblemBox } from "./Form";

export const EvaluationParts = graphql(`
  fragment EvaluationParts on Evaluation {
    id
    status
    progress
    throughput
    memoryGib
    itemCount
    unusableOutputs
    mostlyUnusable
    unusableReasons {
      reason
      count
    }
    queuePosition
    scoredPart
    privateItemCount
    error
    logTail
    dataset {
      id
      name
      size
      access
      perturbation
      perturbationKind
      parent {
        id
      }
    }
    metrics {
      name
      value
      direction
      interval {
        low
        high
      }
    }
    privateMetrics {
      name
      value
      direction
      interval {
        low
        high
      }
    }
    slices {
      slice
      groups {
        group
        size
        metrics {
          name
          value
        }
      }
      gaps {
        metric
        gap
        worstGroup
        worstValue
        overall
        groupsCompared
      }
    }
    perturbations {
      perturbation
      kind
      consistency
      metrics {
        name
        value
      }
    }
    hardware {
      cpu
      cores
      accelerator
    }
  }
`);

const ModelPage = graphql(`
  query ModelPage($id: ID!) {
    model(id: $id) {
      id
      name
      backend
      published
      anonymous
      status
      createdAt
      config
      card {
        parameters
        license
        paper
        description
        trainingData
      }
      submitter {
        id
        username
      }
      task {
        id
        code
        name
        updatesCursor
        viewerIsOwner
      }
      evaluations(first: 100) {
        nodes {
          ...EvaluationParts
        }
      }
    }
    me {
      id
      isAdmin
    }
  }
`);

// The task's evaluations as they change; the page keeps this model's.
const ModelEvaluations = graphql(`
  subscription ModelEvaluations($code: String!, $after: String) {
    evaluationUpdated(taskCode: $code, after: $after) {
      cursor
      evaluation {
        ...EvaluationParts
        model {
          id
        }
      }
    }
  }
`);

const UpdateModel = graphql(`
  mutation UpdateModel($input: UpdateModelInput!) {
    updateModel(input: $input) {
      __typename
      ... on ModelUpdated {
        model {
          id
          published
          anonymous
          name
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

const DeleteModel = graphql(`
  mutation DeleteModel($input: DeleteModelInput!) {
    deleteModel(input: $input) {
      __typename
      ... on ModelDeleted {
        id
      }
      ... on Error {
        message
      }
    }
  }
`);

type Evaluation = EvaluationPartsFragment;

export default function ModelDetail({ code, id }: { code: string; id: string }) {
  const { session } = useAuth();
  const [{ data, error, fetching }, refetch] = useQuery({
    query: ModelPage,
    variables: { id },
    requestPolicy: "cache-and-network",
  });
  const model = data?.model;
  const evaluations = model?.evaluations.nodes ?? [];
  // This model's evaluations as they change: each as it is now (status, progress, results once done); one that
  // ends fetches the page again (the model's status, its ranks).
  const cursor = model?.task.updatesCursor;
  const [live] = useSubscription<ModelEvaluationsSubscription, Latest<Evaluation>>(
    { query: ModelEvaluations, variables: { code, after: cursor }, pause: !cursor },
    (latest = new Map(), event) => {
      const { evaluation } = event.evaluationUpdated;
      return evaluation.model?.id === id ? withLatest(latest, evaluation) : latest;
    },
  );
  const current = currentOf(evaluations, live.data);
  useEnded(current, () => refetch({ requestPolicy: "network-only" }));
  const states = current.map((e) => ({
    evaluation: e,
    status: e.status,
    progress: e.progress,
    error: e.error ?? null,
  }));

  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (!model)
    return fetching ? (
      <p className="muted">Loading…</p>
    ) : (
      <section>
        <h1>No such model</h1>
        <p>
          It was deleted, or it is not published and not yours.{" "}
          <Link href={`/models/${encodeURIComponent(code)}`}>See the task's models</Link>.
        </p>
      </section>
    );
  const mayChange = Boolean(
    session && data?.me && (data.me.isAdmin || (model.submitter && model.submitter.id === data.me.id)),
  );
  const originals = states.filter((s) => !s.evaluation.dataset.parent);
  const card = model.card;
  return (
    <section>
      <p className="crumbs">
        <Link href="/models">Models</Link> /{" "}
        <Link href={`/models/${encodeURIComponent(model.task.code)}`}>{model.task.name}</Link> / {model.name}
      </p>
      <h1>{model.name}</h1>
      <dl className="counters">
        <div>
          <dt>Status</dt>
          <dd data-model-status>{modelStatusWords[model.status]}</dd>
        </div>
        <div>
          <dt>On the leaderboard</dt>
          <dd data-published>{model.published ? "Published" : "Not published"}</dd>
        </div>
        <div>
          <dt>Backend</dt>
          <dd>{model.backend ?? "uploaded predictions"}</dd>
        </div>
        <div>
          <dt>Submitted</dt>
          <dd>
            <time dateTime={model.createdAt}>{new Date(model.createdAt).toLocaleString()}</time>
          </dd>
        </div>
      </dl>
      <p className="muted">
        {model.submitter ? `By ${model.submitter.username}` : "By an anonymous submitter"}
        {model.anonymous && model.submitter && " (shown to others as anonymous)"}.
        {card.parameters != null && ` ${card.parameters.toLocaleString()} parameters.`}
        {card.license && ` Licence: ${card.license}.`}{" "}
        {card.paper && (
          <a href={card.paper} rel="noreferrer noopener" target="_blank">
            Paper
          </a>
        )}
      </p>
      {card.description && <p>{card.description}</p>}
      {card.trainingData && <p className="muted">Trained on: {card.trainingData}</p>}
      {mayChange && <ModelActions model={model} />}

      <section className="card" aria-labelledby="progress-title">
        <h2 id="progress-title">Evaluation progress</h2>
        <p className="muted" role="status" data-evaluation-summary>
          {evaluations.length === 0 ? "No evaluation queued: the task has no scoring data set yet." : doneCount(states)}
        </p>
        <ul className="progress-list">
          {states.map(({ evaluation, status, progress, error: failure }) => (
            <li key={evaluation.id}>
              <span className="progress-name">{evaluation.dataset.name}</span>
              <progress
                max={1}
                value={progress}
                aria-label={`${evaluation.dataset.name}: ${evaluationStatusWords[status]}`}
              />
              <span className={`progress-state state-${status.toLowerCase()}`}>
                {evaluationStatusWords[status]}
                {status === "RUNNING" && ` ${percent(progress, 0)}`}
                {status === "QUEUED" &&
                  evaluation.queuePosition != null &&
                  ` (${ordinal(evaluation.queuePosition)} in line)`}
              </span>
              {failure && <span className="error progress-error">{failure}</span>}
            </li>
          ))}
        </ul>
      </section>

      <h2>Results</h2>
      {originals.length === 0 && <p className="muted">No results yet.</p>}
      {originals.map(({ evaluation, status }) => (
        <Results
          key={evaluation.id}
          evaluation={evaluation}
          status={status}
          // item by item: the task's owners (and admins), and the submitter where the set's gold is public
          itemsAllowed={model.task.viewerIsOwner || (mayChange && evaluation.dataset.access === "STANDARD")}
        />
      ))}
    </section>
  );
}

type ActionModel = { id: string; name: string; published: boolean; task: { code: string } };

function ModelActions({ model }: { model: ActionModel }) {
  const [, navigate] = useLocation();
  const [updating, update] = useMutation(UpdateModel);
  const [deleting, remove] = useMutation(DeleteModel);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const busy = updating.fetching || deleting.fetching;

  async function togglePublished() {
    const published = !model.published;
    const result = await update({ input: { id: model.id, published } });
    const failed = problemOf(result.error, result.data?.updateModel, "ModelUpdated");
    setProblem(failed);
    setDone(failed ? null : published ? "Published: it is on the leaderboard." : "Taken off the leaderboard.");
  }

  async function deleteIt() {
    const result = await remove({ input: { id: model.id } });
    const failed = problemOf(result.error, result.data?.deleteModel, "ModelDeleted");
    setProblem(failed);
    setConfirming(false);
    if (!failed) navigate(`/models/${encodeURIComponent(model.task.code)}`);
  }

  return (
    <div className="model-actions">
      <div className="actions">
        <button type="button" disabled={busy} onClick={togglePublished}>
          {model.published ? "Unpublish" : "Publish"}
        </button>
        {!confirming && (
          <button type="button" className="secondary" disabled={busy} onClick={() => setConfirming(true)}>
            Delete model
          </button>
        )}
      </div>
      {confirming && (
        <fieldset className="panel">
          <legend>Delete {model.name}?</legend>
          <p>Its evaluations go with it. This cannot be undone.</p>
          <div className="actions">
            <button type="button" className="danger" disabled={busy} onClick={deleteIt}>
              Yes, delete it
            </button>
            <button type="button" className="secondary" onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </div>
        </fieldset>
      )}
      <div role="status" className="done">
        {done}
      </div>
      <ProblemBox problem={problem} />
    </div>
  );
}

function Results({
  evaluation,
  status,
  itemsAllowed,
}: {
  evaluation: Evaluation;
  status: Evaluation["status"];
  itemsAllowed: boolean;
}) {
  const title = `results-${evaluation.id.replace(/\W+/g, "")}`;
  const dataset = evaluation.dataset;
  return (
    <article className="card results" aria-labelledby={title}>
      <h3 id={title}>
        {dataset.name} <span className="muted small">({dataset.size} items)</span>
      </h3>
      {status === "FAILED" || evaluation.status === "FAILED" ? (
        <>
          <p className="error">The evaluation failed: {evaluation.error ?? "no reason was kept."}</p>
          {evaluation.logTail && (
            <details>
              <summary>The end of its log</summary>
              <pre className="log">{evaluation.logTail}</pre>
            </details>
          )}
        </>
      ) : evaluation.status !== "DONE" ? (
        <p className="muted">Results appear here when the evaluation is done.</p>
      ) : (
        <>
          <p className="muted small">
            {evaluation.itemCount ?? dataset.size} items scored
            {evaluation.scoredPart === "PUBLIC" && " (the public part)"}
            {evaluation.throughput != null && `, ${metricValue(evaluation.throughput)} items/s`}
            {evaluation.memoryGib != null && `, ${evaluation.memoryGib.toPrecision(3)} GiB of memory`}
            {evaluation.unusableOutputs ? `, ${evaluation.unusableOutputs} unusable answers` : ""}
            {evaluation.hardware &&
              ` on ${evaluation.hardware.accelerator ?? evaluation.hardware.cpu}${evaluation.hardware.cores ? ` (${evaluation.hardware.cores} cores)` : ""}`}
            .
          </p>
          {evaluation.mostlyUnusable && (
            <p className="error">
              Most answers could not be read, so nothing that depends on the gold is shown here and the model ranks
              after every model that has figures.
            </p>
          )}
          {evaluation.unusableReasons.length > 0 && (
            <details open={evaluation.mostlyUnusable}>
              <summary>Why answers could not be read</summary>
              <ul>
                {evaluation.unusableReasons.map((r) => (
                  <li key={r.reason}>
                    {r.reason} <span className="muted small">({r.count})</span>
                  </li>
                ))}
              </ul>
            </details>
          )}
          <MetricTable caption={`Metrics on ${dataset.name}`} metrics={evaluation.metrics} />
          {evaluation.privateMetrics && (
            <MetricTable
              caption={`Metrics on the private part of ${dataset.name} (${evaluation.privateItemCount ?? "?"} items)`}
              metrics={evaluation.privateMetrics}
            />
          )}
          {evaluation.slices.map((slice) => (
            <SliceTable key={slice.slice} dataset={dataset.name} slice={slice} />
          ))}
          {evaluation.perturbations.length > 0 && <PerturbationTable evaluation={evaluation} />}
          {itemsAllowed && <ItemDownload evaluation={evaluation} />}
        </>
      )}
    </article>
  );
}

/** 1st, 2nd, 3rd, 4th... */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

function MetricTable({ caption, metrics }: { caption: string; metrics: Evaluation["metrics"] }) {
  if (metrics.length === 0) return null;
  return (
    <div className="table-scroll">
      <table className="data">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Metric</th>
            <th scope="col">Value</th>
            <th scope="col">95% interval</th>
          </tr>
        </thead>
        <tbody>
          {metrics.map((m) => (
            <tr key={m.name}>
              <th scope="row">
                {m.name} <span className="muted small">({m.direction === "LOWER" ? "lower" : "higher"} is better)</span>
              </th>
              <td className="num">{metricValue(m.value)}</td>
              <td className="num">{intervalText(m.interval)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function SliceTable({ dataset, slice }: { dataset: string; slice: Evaluation["slices"][number] }) {
  const names = [...new Set(slice.groups.flatMap((g) => g.metrics.map((m) => m.name)))];
  const compared = Math.max(0, ...slice.gaps.map((g) => g.groupsCompared));
  return (
    <div className="slice">
      <div className="table-scroll">
        <table className="data">
          <caption>
            Fairness slice {slice.slice} on {dataset}: {compared} group{compared === 1 ? "" : "s"} large enough to
            compare
          </caption>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Items</th>
              {names.map((n) => (
                <th scope="col" key={n}>
                  {n}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {slice.groups.map((g) => (
              <tr key={g.group}>
                <th scope="row">{g.group}</th>
                <td className="num">{g.size}</td>
                {names.map((n) => (
                  <td className="num" key={n}>
                    {metricValue(g.metrics.find((m) => m.name === n)?.value)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ul className="gaps">
        {slice.gaps.map((gap) => (
          <li key={gap.metric}>
            {gap.gap == null
              ? `${gap.metric}: no gap computed (no group large enough to compare).`
              : `${gap.metric}: gap ${metricValue(gap.gap)}, worst group ${gap.worstGroup} at ${metricValue(gap.worstValue)} against ${metricValue(gap.overall)} overall.`}
          </li>
        ))}
      </ul>
    </div>
  );
}

function PerturbationTable({ evaluation }: { evaluation: Evaluation }) {
  const names = [...new Set(evaluation.perturbations.flatMap((p) => p.metrics.map((m) => m.name)))];
  return (
    <div className="table-scroll">
      <table className="data">
        <caption>Perturbed copies of {evaluation.dataset.name}: consistency with the original answers</caption>
        <thead>
          <tr>
            <th scope="col">Perturbation</th>
            <th scope="col">Counts towards</th>
            <th scope="col">Consistency</th>
            {names.map((n) => (
              <th scope="col" key={n}>
                {n}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {evaluation.perturbations.map((p) => (
            <tr key={p.perturbation}>
              <th scope="row">{p.perturbation}</th>
              <td>{p.kind === "FAIRNESS" ? "fairness" : "robustness"}</td>
              <td className="num">{percent(p.consistency)}</td>
              {names.map((n) => (
                <td className="num" key={n}>
                  {metricValue(p.metrics.find((m) => m.name === n)?.value)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The evaluation item by item (GET /evaluations/{id}/predictions): gold, the model's output, fooled and right. */
function ItemDownload({ evaluation }: { evaluation: Evaluation }) {
  const { session } = useAuth();
  const [state, setState] = useState<{ busy: boolean; problem: string | null; done: string }>({
    busy: false,
    problem: null,
    done: "",
  });
  const file = `${evaluation.dataset.name}-items.jsonl`;
  async function download() {
    setState({ busy: true, problem: null, done: "" });
    const problem = await downloadWithToken(
      `/evaluations/${encodeURIComponent(evaluation.id)}/predictions?format=jsonl`,
      session?.token ?? null,
      file,
    );
    setState({ busy: false, problem, done: problem ? "" : `Downloaded ${file}.` });
  }
  return (
    <p className="actions">
      <button type="button" className="secondary" onClick={download} disabled={state.busy}>
        {state.busy ? "Downloading…" : "Download item by item (JSONL)"}
        <span className="sr"> for {evaluation.dataset.name}</span>
      </button>{" "}
      <span role="status" className="small">
        {state.done}
      </span>
      {state.problem && (
        <span role="alert" className="error small">
          {state.problem}
        </span>
      )}
    </p>
  );
}
