// A task's training jobs, newest first: status, stage and a progress bar kept current by trainingJobUpdated (from
// the list's cursor, so nothing is missed and nothing is polled), the error and the end of the log of a failed
// one, the candidate of one that succeeded, and Cancel for those that may still move.
import { useEffect } from "react";
import { useMutation, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type { TrainingJobPartsFragment, TrainingJobUpdatedSubscription } from "../../gql/graphql";
import { percent } from "../../lib/format";
import { currentOf, type Latest, unknownOf, useEnded, withLatest } from "../../lib/live";
import { modelHref } from "../../lib/models";
import { hyperText, isActive, parameterEntries, trainingStatusWords } from "../../lib/retraining";
import { Outcome, useOutcome, when } from "./parts";
import { Digest } from "./registry";

export const TrainingJobParts = graphql(`
  fragment TrainingJobParts on TrainingJob {
    id
    recipe
    parameters {
      name
      boolean
      integer
      number
      string
    }
    seed
    includeBaseData
    status
    progress
    stage
    error
    logTail
    attempts
    createdAt
    startedAt
    finishedAt
    datasets {
      id
      name
    }
    parent {
      id
      name
    }
    candidate {
      id
      name
      weights
      model {
        id
      }
    }
  }
`);

export const Jobs = graphql(`
  query RetrainingJobs($code: String!, $first: Int!) {
    task(code: $code) {
      id
      updatesCursor
      trainingJobs(first: $first) {
        totalCount
        nodes {
          ...TrainingJobParts
        }
      }
    }
  }
`);

// Each job as it changes (queued, started, about once a second while it trains, ended), from the list's cursor on.
const JobUpdated = graphql(`
  subscription TrainingJobUpdated($code: String!, $after: String) {
    trainingJobUpdated(taskCode: $code, after: $after) {
      cursor
      job {
        ...TrainingJobParts
      }
    }
  }
`);

const CancelTraining = graphql(`
  mutation CancelTraining($input: CancelTrainingInput!) {
    cancelTraining(input: $input) {
      __typename
      ... on TrainingCancelled {
        job {
          id
          status
          progress
          stage
          finishedAt
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

type Job = TrainingJobPartsFragment;

/** How many jobs the page lists (the newest); it says how many more there are. */
export const JOBS_SHOWN = 50;

/** The jobs, each as the latest trainingJobUpdated event says it is: `cursor` is the list's Task.updatesCursor. A
 * job the list lacks (started by another owner) reloads it; one that ends calls `onEnded`. */
export function JobList({
  jobs,
  total,
  cursor,
  code,
  onEnded,
  reload,
}: {
  jobs: readonly Job[];
  total: number;
  cursor: string | undefined;
  code: string;
  onEnded: () => void;
  reload: () => void;
}) {
  const [live] = useSubscription<TrainingJobUpdatedSubscription, Latest<Job>>(
    { query: JobUpdated, variables: { code, after: cursor }, pause: !cursor },
    (latest = new Map(), event) => withLatest(latest, event.trainingJobUpdated.job),
  );
  const unknown = unknownOf(jobs, live.data).join();
  useEffect(() => {
    if (unknown) reload();
  }, [unknown, reload]);
  const shown = currentOf(jobs, live.data);
  useEnded(shown, onEnded);
  if (!shown.length) return <p className="muted">No training job yet.</p>;
  return (
    <>
      <ol className="jobs" aria-label="Training jobs, newest first">
        {shown.map((job) => (
          <JobItem key={job.id} job={job} code={code} onEnded={onEnded} />
        ))}
      </ol>
      {total > shown.length && (
        <p className="small muted">
          The newest {shown.length} of {total} jobs.
        </p>
      )}
    </>
  );
}

function JobItem({ job, code, onEnded }: { job: Job; code: string; onEnded: () => void }) {
  const [cancelling, cancel] = useMutation(CancelTraining);
  const outcome = useOutcome();
  const asked = when(job.createdAt);
  const parameters = parameterEntries(job.parameters)
    .map(([name, value]) => `${name} ${hyperText(value)}`)
    .join(", ");
  const on = [...job.datasets.map((d) => d.name), ...(job.includeBaseData ? ["the base data"] : [])].join(", ");

  async function stop() {
    const result = await cancel({ input: { id: job.id } });
    if (outcome.record(result.error, result.data?.cancelTraining, "TrainingCancelled", "Cancelled.")) onEnded();
  }

  return (
    <li className="job" data-job-status={job.status}>
      <div className="job-head">
        <span>
          <strong>{job.recipe}</strong>, seed {job.seed} <span className="muted small">asked {asked}</span>
        </span>
        <span className={`job-state state-${job.status.toLowerCase()}`}>{trainingStatusWords[job.status]}</span>
      </div>
      <p className="small">
        On {on || "nothing"}
        {parameters ? `; ${parameters}` : ""}
        {job.parent ? `; parent ${job.parent.name}` : ""}
        {job.attempts > 1 ? `; attempt ${job.attempts}` : ""}
      </p>
      {isActive(job.status) && (
        <div className="job-progress">
          <progress max={1} value={job.progress} aria-label={`Training ${job.recipe}, asked ${asked}`} />
          <span className="small">
            {job.stage || (job.status === "QUEUED" ? "waiting for a worker" : "starting")} · {percent(job.progress, 0)}
          </span>
        </div>
      )}
      {job.status === "FAILED" && (
        <>
          <p className="error">{job.error ?? "The job failed without saying why."}</p>
          {job.logTail && (
            <details>
              <summary>The end of its log</summary>
              <pre>{job.logTail}</pre>
            </details>
          )}
        </>
      )}
      {job.status === "SUCCEEDED" && job.candidate && (
        <p className="small">
          Candidate {job.candidate.name}, weights <Digest weights={job.candidate.weights} />
          {job.candidate.model && (
            <>
              {" "}
              · <Link href={modelHref(code, job.candidate.model.id)}>its evaluations</Link>
            </>
          )}
        </p>
      )}
      {job.status === "SUCCEEDED" && !job.candidate && <p className="small muted">Registering the candidate…</p>}
      {isActive(job.status) && (
        <p className="actions">
          <button type="button" className="secondary danger" disabled={cancelling.fetching} onClick={stop}>
            Cancel training
          </button>
        </p>
      )}
      <Outcome outcome={outcome} />
    </li>
  );
}
