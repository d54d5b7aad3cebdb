// Machine adversaries, for a task's owners: start a generation run (Mutation.generateCandidates), in which an
// adversary attacks the open round's contexts and the examples the target got right within a budget of target
// queries, and follow the task's runs (Task.adversaryRuns): polled every second while one is queued or running,
// their status changes announced, Cancel for those that may still move (Mutation.cancelGeneration).
import "./adversaries.css";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useMutation, useQuery, useSubscription } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type {
  AdversaryRunPartsFragment,
  AdversaryRunUpdatedSubscription,
  GenerateCandidatesMutation,
} from "../../gql/graphql";
import {
  type AdversaryChoice,
  attacksWhat,
  duration,
  generators,
  isRunActive,
  itemsText,
  queriesText,
  type RunStatus,
  runName,
  runStatusWords,
  spanText,
  statusChanges,
  statusesOf,
  wholeNumber,
} from "../../lib/adversaryRuns";
import { type Problem, problemOf, transportMessage } from "../../lib/errors";
import { currentOf, type Latest, unknownOf, withLatest } from "../../lib/live";
import { submitted, TextInput } from "../Form";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { Outcome, Select, shortWhen, textOf, useOutcome, when } from "./parts";

const OwnerAdversaries = graphql(`
  query OwnerAdversaries($code: String!) {
    task(code: $code) {
      id
      adversaries {
        name
        description
        needsDraft
        assists
        generates
        available
        unavailableReason
      }
    }
  }
`);

export const AdversaryRunParts = graphql(`
  fragment AdversaryRunParts on AdversaryRun {
    id
    adversary
    roundNumber
    status
    budget
    seed
    queries
    itemsTotal
    itemsDone
    candidates
    error
    createdAt
    startedAt
    finishedAt
  }
`);

const AdversaryRuns = graphql(`
  query AdversaryRuns($code: String!, $first: Int!) {
    task(code: $code) {
      id
      updatesCursor
      adversaryRuns(first: $first) {
        totalCount
        nodes {
          ...AdversaryRunParts
        }
      }
    }
  }
`);

// Each run as it changes, from the list's cursor on, so that nothing that changed after the list was read is
// missed.
const RunUpdated = graphql(`
  subscription AdversaryRunUpdated($code: String!, $after: String) {
    adversaryRunUpdated(taskCode: $code, after: $after) {
      cursor
      run {
        ...AdversaryRunParts
      }
    }
  }
`);

const GenerateCandidates = graphql(`
  mutation GenerateCandidates($input: GenerateCandidatesInput!) {
    generateCandidates(input: $input) {
      __typename
      ... on GenerationStarted {
        run {
          ...AdversaryRunParts
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
      ... on QuotaExceeded {
        resetsInSeconds
      }
    }
  }
`);

const CancelGeneration = graphql(`
  mutation CancelGeneration($input: CancelGenerationInput!) {
    cancelGeneration(input: $input) {
      __typename
      ... on GenerationCancelled {
        run {
          ...AdversaryRunParts
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

type Run = AdversaryRunPartsFragment;
type Answer = GenerateCandidatesMutation["generateCandidates"];

/** The form's fields, as the server's FieldError paths name them. */
const FIELDS = ["adversary", "budget", "seed"];
const DEFAULT_BUDGET = 50;
/** How many runs the page lists (the newest); it says how many more there are. */
const RUNS_SHOWN = 50;

export default function Adversaries({ task }: { task: ManagedTask }) {
  const variables = { code: task.code };
  const [adversaries] = useQuery({ query: OwnerAdversaries, variables });
  const [runs, refresh] = useQuery({
    query: AdversaryRuns,
    variables: { code: task.code, first: RUNS_SHOWN },
    requestPolicy: "cache-and-network",
  });
  const reload = useCallback(() => refresh({ requestPolicy: "network-only" }), [refresh]);
  // Runs change live (adversaryRunUpdated): each run as it is now replaces the listed one; one the list lacks
  // (started by another owner) reloads the list.
  const loaded = runs.data?.task?.adversaryRuns?.nodes;
  const total = runs.data?.task?.adversaryRuns?.totalCount ?? 0;
  const cursor = runs.data?.task?.updatesCursor;
  const [live] = useSubscription<AdversaryRunUpdatedSubscription, Latest<Run>>(
    { query: RunUpdated, variables: { code: task.code, after: cursor }, pause: !cursor },
    (latest = new Map(), event) => withLatest(latest, event.adversaryRunUpdated.run),
  );
  const unknown = unknownOf(loaded ?? [], live.data).join();
  useEffect(() => {
    if (unknown) reload();
  }, [unknown, reload]);
  const list = useMemo(() => (loaded ? currentOf(loaded, live.data) : undefined), [loaded, live.data]);

  // Announce what changed between two answers (the first one announces nothing).
  const seen = useRef<Map<string, RunStatus> | null>(null);
  const [news, setNews] = useState("");
  useEffect(() => {
    if (!list) return;
    const changes = statusChanges(seen.current, list);
    seen.current = statusesOf(list);
    if (changes.length) setNews(changes.join(" "));
  }, [list]);

  const round = task.currentRound;
  const code = encodeURIComponent(task.code);
  return (
    <section aria-labelledby="adversaries-title" className="adversaries">
      <h2 id="adversaries-title">Machine adversaries</h2>
      <p className="lead">
        A generation run points a machine adversary at the open round's contexts and at the examples the target got
        right, and spends at most its budget of questions to the target. Each candidate that fools the target enters the{" "}
        <Link href={`/validate/${code}`}>validation queue</Link> as a <strong>MACHINE</strong> example: validators judge
        it like any other, and see where it came from only after voting. Runs take seconds to minutes; the round's{" "}
        <Link href={`/leaderboards/${code}`}>table by source</Link> counts what they collect.
      </p>
      {!task.active ? (
        <p className="notice">The task is inactive: it has no open round to attack, so a run would not start.</p>
      ) : !round || round.endedAt ? (
        <p className="notice">
          {round ? `Round ${round.number} is closed` : "The task has no round yet"}: open one on the{" "}
          <Link href={`/tasks/${code}/manage/rounds`}>Rounds</Link> tab before starting a run.
        </p>
      ) : null}

      <StartForm
        task={task}
        adversaries={adversaries.data?.task?.adversaries ?? undefined}
        loading={adversaries.fetching && !adversaries.data}
        error={adversaries.error ? transportMessage(adversaries.error) : ""}
        onStarted={reload}
      />

      <section aria-labelledby="runs-title">
        <h3 id="runs-title">Runs</h3>
        <p role="status" className="run-news small">
          {news}
        </p>
        {runs.error && <p role="alert">{transportMessage(runs.error)}</p>}
        {runs.fetching && !runs.data && <p className="muted">Loading the runs…</p>}
        {list && list.length === 0 && <p className="muted">No run yet.</p>}
        {list && list.length > 0 && <RunTable runs={list} task={task} onChanged={reload} />}
        {list && total > list.length && (
          <p className="small muted">
            The newest {list.length} of {total} runs.
          </p>
        )}
      </section>
    </section>
  );
}

function StartForm({
  task,
  adversaries,
  loading,
  error,
  onStarted,
}: {
  task: ManagedTask;
  adversaries: readonly AdversaryChoice[] | undefined;
  loading: boolean;
  error: string;
  onStarted: () => void;
}) {
  const { usable, unusable } = generators(adversaries ?? []);
  const [picked, setPicked] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [starting, generate] = useMutation(GenerateCandidates);
  const outcome = useOutcome();
  const chosen = usable.find((a) => a.name === picked) ?? usable[0];

  async function start(form: FormData) {
    const errors: Record<string, string> = {};
    const adversary = String(form.get("adversary") ?? "");
    if (!adversary) errors.adversary = "Choose an adversary.";
    const budget = wholeNumber(textOf(form, "budget"), "budget");
    if ("error" in budget) errors.budget = budget.error;
    else if (budget.value == null) errors.budget = "Give the run a budget of target queries.";
    const seed = wholeNumber(textOf(form, "seed"), "seed");
    if ("error" in seed) errors.seed = seed.error;
    if (Object.keys(errors).length || !("value" in budget) || budget.value == null || !("value" in seed)) {
      setFields(errors);
      return outcome.fail("The run did not start: fix the fields marked above.");
    }
    const result = await generate({
      input: { taskCode: task.code, adversary, budget: budget.value, seed: seed.value },
    });
    const answer: Answer | undefined = result.data?.generateCandidates;
    const problem = problemOf(result.error, answer, "GenerationStarted", FIELDS);
    setFields(problem?.fields ?? {});
    if (problem) return outcome.fail(refusal(answer, problem));
    if (answer?.__typename === "GenerationStarted")
      outcome.succeed(
        `Started a run of ${runName(answer.run)} on round ${answer.run.roundNumber}, with a budget of ${answer.run.budget} target queries.`,
      );
    onStarted();
  }

  const describedBy = (name: string, hint?: string) =>
    [hint, fields[name] && `gen-${name}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <form className="card owner-form" aria-labelledby="generate-title" onSubmit={submitted(start)} noValidate>
      <h3 id="generate-title">Start a run</h3>
      {error && <p role="alert">{error}</p>}
      {loading && <p className="muted">Loading the adversaries…</p>}
      {adversaries && usable.length === 0 && (
        <p className="notice">No adversary can generate candidates for {task.name} on this server.</p>
      )}
      <Select
        label="Adversary"
        id="gen-adversary"
        name="adversary"
        value={chosen?.name ?? ""}
        onChange={(e) => {
          setPicked(e.currentTarget.value);
          setFields(({ adversary: _, ...rest }) => rest);
        }}
        disabled={!usable.length}
        aria-invalid={fields.adversary ? true : undefined}
        aria-describedby={describedBy("adversary", chosen ? "gen-adversary-hint" : undefined)}
      >
        {usable.map((a) => (
          <option key={a.name} value={a.name}>
            {a.name}
          </option>
        ))}
        {unusable.map((a) => (
          <option key={a.name} value={a.name} disabled>
            {a.name} (unavailable: {a.unavailableReason ?? "cannot serve this task"})
          </option>
        ))}
      </Select>
      {chosen && (
        <p className="hint adversary-hint" id="gen-adversary-hint">
          {chosen.description} {attacksWhat(chosen)}
        </p>
      )}
      {fields.adversary && (
        <p className="error" id="gen-adversary-error">
          {fields.adversary}
        </p>
      )}
      {unusable.length > 0 && (
        <details className="unavailable small">
          <summary>Unavailable here ({unusable.length})</summary>
          <ul>
            {unusable.map((a) => (
              <li key={a.name}>
                <strong>{a.name}</strong>: {a.unavailableReason ?? "it cannot serve this task"}
              </li>
            ))}
          </ul>
        </details>
      )}
      <TextInput
        label="Budget"
        id="gen-budget"
        name="budget"
        type="number"
        inputMode="numeric"
        min={1}
        step={1}
        defaultValue={DEFAULT_BUDGET}
        hint="Target queries the run may spend, within the task's daily budget for generation."
        error={fields.budget}
      />
      <TextInput
        label="Seed (optional)"
        id="gen-seed"
        name="seed"
        type="number"
        inputMode="numeric"
        min={0}
        step={1}
        hint="The same round, adversary and seed propose the same; empty: random."
        error={fields.seed}
      />
      <p className="actions">
        <button type="submit" disabled={starting.fetching || !usable.length}>
          {starting.fetching ? "Starting…" : "Start run"}
        </button>
      </p>
      <Outcome outcome={outcome} />
    </form>
  );
}

/** A refusal in words: field errors are shown beside their fields (the alert points at them), and QuotaExceeded
 * says when to come back in hours and minutes rather than seconds. */
function refusal(answer: Answer | undefined, problem: Problem): string {
  if (answer?.__typename === "QuotaExceeded" && (answer.resetsInSeconds ?? 0) > 0)
    return `${answer.message} (try again in ${spanText(answer.resetsInSeconds ?? 0)}).`;
  const beside = Object.keys(problem.fields).length;
  if (answer?.__typename === "InvalidInput" && beside > 0 && beside === answer.fieldErrors.length)
    return "The run did not start: fix the fields marked above.";
  return problem.message;
}

function RunTable({ runs, task, onChanged }: { runs: readonly Run[]; task: ManagedTask; onChanged: () => void }) {
  const [cancelling, cancel] = useMutation(CancelGeneration);
  const outcome = useOutcome();

  async function stop(run: Run) {
    const result = await cancel({ input: { id: run.id } });
    const answer = result.data?.cancelGeneration;
    const now = answer?.__typename === "GenerationCancelled" ? answer.run : run;
    const stored = now.candidates === 1 ? "its candidate stays" : `its ${now.candidates} candidates stay`;
    const words =
      now.status !== "CANCELLED"
        ? `The run of ${runName(run)} had already ended (${runStatusWords[now.status].toLowerCase()}).`
        : now.candidates
          ? `Cancelled the run of ${runName(run)}; ${stored} in the validation queue.`
          : `Cancelled the run of ${runName(run)} before it stored a candidate.`;
    if (outcome.record(result.error, answer, "GenerationCancelled", words)) onChanged();
  }

  const caption = `Generation runs of ${task.name}, newest first`;
  return (
    <>
      <ScrollBox label={`${caption}, scrollable`}>
        <table className="table runs">
          <caption>{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Adversary</th>
              <th scope="col" className="num">
                Round
              </th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col" className="num">
                Candidates
              </th>
              <th scope="col">Started</th>
              <th scope="col">Finished</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <RunRow
                key={run.id}
                run={run}
                cancelling={cancelling.fetching}
                onCancel={() => {
                  void stop(run);
                }}
              />
            ))}
          </tbody>
        </table>
      </ScrollBox>
      <Outcome outcome={outcome} />
    </>
  );
}

function RunRow({ run, cancelling, onCancel }: { run: Run; cancelling: boolean; onCancel: () => void }) {
  const active = isRunActive(run.status);
  const name = runName(run);
  const took = duration(run.startedAt, run.finishedAt);
  return (
    <tr data-run={run.id} data-run-status={run.status}>
      <th scope="row">
        {run.adversary}
        <span className="muted small block">
          seed {run.seed} · asked <time dateTime={run.createdAt}>{shortWhen(run.createdAt)}</time>
        </span>
      </th>
      <td className="num" data-label="Round">
        {run.roundNumber}
      </td>
      <td data-label="Status">
        <span className={`chip run-state state-${run.status.toLowerCase()}`} data-status={run.status}>
          {runStatusWords[run.status]}
        </span>
        {run.error && <span className={`small block ${run.status === "FAILED" ? "error" : "muted"}`}>{run.error}</span>}
        {active && (
          <button type="button" className="secondary danger small-button" disabled={cancelling} onClick={onCancel}>
            Cancel<span className="sr"> the run of {name}</span>
          </button>
        )}
      </td>
      <td className="run-progress" data-label="Progress">
        <progress
          max={Math.max(1, run.budget)}
          value={Math.min(run.queries, run.budget)}
          aria-label={`Target queries spent by ${name}`}
        />
        <span className="small block" data-queries>
          {queriesText(run)}
        </span>
        <span className="small block muted">{itemsText(run)}</span>
      </td>
      <td className="num" data-label="Candidates" data-candidates>
        {run.candidates}
      </td>
      <td data-label="Started">
        {run.startedAt ? (
          <time dateTime={run.startedAt} title={when(run.startedAt)}>
            {shortWhen(run.startedAt)}
          </time>
        ) : (
          <span className="muted">not yet</span>
        )}
      </td>
      <td data-label="Finished">
        {run.finishedAt ? (
          <time dateTime={run.finishedAt} title={when(run.finishedAt)}>
            {shortWhen(run.finishedAt)}
          </time>
        ) : (
          <span className="muted">
            {run.status === "RUNNING" ? "running" : run.status === "QUEUED" ? "not yet" : "–"}
          </span>
        )}
        {took && <span className="small muted block">{active ? `for ${took}` : `took ${took}`}</span>}
      </td>
    </tr>
  );
}
