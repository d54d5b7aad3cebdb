// A task's training jobs, newest first: status, stage and a progress bar live from trainingProgress while a job is
// queued or running (and a refetch now and then, for events missed), the error and the end of the log of a failed
// one, the candidate of one that succeeded, and Cancel for those that may still move.
import { useEffect } from "react";
import { useMutation, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type { RetrainingJobsQuery, TrainingJobProgressSubscription } from "../../gql/graphql";
import { percent } from "../../lib/format";
import { modelHref } from "../../lib/models";
import {
  hyperparameterEntries,
  hyperText,
  isActive,
  liveJob,
  type TrainingEvent,
  trainingStatusWords,
} from "../../lib/retraining";
import { Outcome, useOutcome, usePoll, when } from "./parts";
import { Digest } from "./registry";

export const Jobs = graphql(`
  query RetrainingJobs($code: String!) {
    trainingJobs(taskCode: $code) {
      id
      recipe
      hyperparameters
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
        modelId
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

const Progress = graphql(`
  subscription TrainingJobProgress($jobId: ID!) {
    trainingProgress(jobId: $jobId) {
      jobId
      status
      progress
      stage
      error
      candidateId
    }
  }
`);

type Job = NonNullable<RetrainingJobsQuery["trainingJobs"]>[number];

export function JobList({
  jobs,
  code,
  onEnded,
  reload,
}: {
  jobs: readonly Job[];
  code: string;
  onEnded: () => void;
  reload: () => void;
}) {
  usePoll(
    jobs.some((j) => isActive(j.status)),
    reload,
  );
  if (!jobs.length) return <p className="muted">No training job yet.</p>;
  return (
    <ol className="jobs" aria-label="Training jobs, newest first">
      {jobs.map((job) => (
        <JobItem key={job.id} job={job} code={code} onEnded={onEnded} />
      ))}
    </ol>
  );
}

function JobItem({ job, code, onEnded }: { job: Job; code: string; onEnded: () => void }) {
  const active = isActive(job.status);
  const [live] = useSubscription<TrainingJobProgressSubscription, TrainingEvent>(
    { query: Progress, variables: { jobId: job.id }, pause: !active },
    (_, event) => event.trainingProgress,
  );
  const shown = liveJob(job, live.data);
  const endedLive = active && !isActive(shown.status);
  useEffect(() => {
    if (endedLive) onEnded();
  }, [endedLive, onEnded]);
  const [cancelling, cancel] = useMutation(CancelTraining);
  const outcome = useOutcome();
  const asked = when(job.createdAt);
  const parameters = hyperparameterEntries(job.hyperparameters)
    .map(([name, value]) => `${name} ${hyperText(value)}`)
    .join(", ");
  const on = [...job.datasets.map((d) => d.name), ...(job.includeBaseData ? ["the base data"] : [])].join(", ");

  async function stop() {
    const result = await cancel({ input: { jobId: job.id } });
    if (outcome.record(result.error, result.data?.cancelTraining, "TrainingCancelled", "Cancelled.")) onEnded();
  }

  return (
    <li className="job" data-job-status={shown.status}>
      <div className="job-head">
        <span>
          <strong>{job.recipe}</strong>, seed {job.seed} <span className="muted small">asked {asked}</span>
        </span>
        <span className={`job-state state-${shown.status.toLowerCase()}`}>{trainingStatusWords[shown.status]}</span>
      </div>
      <p className="small">
        On {on || "nothing"}
        {parameters ? `; ${parameters}` : ""}
        {job.parent ? `; parent ${job.parent.name}` : ""}
        {job.attempts > 1 ? `; attempt ${job.attempts}` : ""}
      </p>
      {isActive(shown.status) && (
        <div className="job-progress">
          <progress max={1} value={shown.progress} aria-label={`Training ${job.recipe}, asked ${asked}`} />
          <span className="small">
            {shown.stage || (shown.status === "QUEUED" ? "waiting for a worker" : "starting")} ·{" "}
            {percent(shown.progress, 0)}
          </span>
        </div>
      )}
      {shown.status === "FAILED" && (
        <>
          <p className="error">{shown.error ?? "The job failed without saying why."}</p>
          {job.logTail && (
            <details>
              <summary>The end of its log</summary>
              <pre>{job.logTail}</pre>
            </details>
          )}
        </>
      )}
      {shown.status === "SUCCEEDED" && job.candidate && (
        <p className="small">
          Candidate {job.candidate.name}, weights <Digest weights={job.candidate.weights} />
          {job.candidate.modelId && (
            <>
              {" "}
              · <Link href={modelHref(code, job.candidate.modelId)}>its evaluations</Link>
            </>
          )}
        </p>
      )}
      {shown.status === "SUCCEEDED" && !job.candidate && <p className="small muted">Registering the candidate…</p>}
      {isActive(shown.status) && (
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
