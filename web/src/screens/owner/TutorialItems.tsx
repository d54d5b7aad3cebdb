// The task's tutorial as its owners build it: the pass mark, the items with their verdicts and reasons, and decided
// examples to add, picked from a list (never an id typed in).
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { ValidationLabel } from "../../gql/graphql";
import { transportMessage } from "../../lib/errors";
import { showValue } from "../../lib/fields";
import { TutorialStatus } from "../Tutorial";
import type { ManagedTask } from "./Manage";
import { Outcome, useOutcome } from "./parts";

const Decided = graphql(`
  query TutorialCandidates($code: String!) {
    task(code: $code) {
      id
      accepted: examples(status: ACCEPTED, first: 10) {
        nodes {
          id
          fields
          status
        }
      }
      rejected: examples(status: REJECTED, first: 10) {
        nodes {
          id
          fields
          status
        }
      }
    }
  }
`);

const AddItem = graphql(`
  mutation AddTutorialItem($input: AddTutorialItemInput!) {
    addTutorialItem(input: $input) {
      __typename
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

const RemoveItem = graphql(`
  mutation RemoveTutorialItem($input: RemoveTutorialItemInput!) {
    removeTutorialItem(input: $input) {
      __typename
      ... on Error {
        message
      }
    }
  }
`);

const SetPassMark = graphql(`
  mutation SetPassMark($input: UpdateTaskSettingsInput!) {
    updateTaskSettings(input: $input) {
      __typename
      ... on TaskSettingsUpdated {
        task {
          id
          settings {
            qualificationPassMark
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
    }
  }
`);

/** The text of an example's fields in one line. */
function line(fields: unknown): string {
  return Object.values((fields ?? {}) as Record<string, unknown>)
    .map(showValue)
    .filter(Boolean)
    .join(" · ");
}

export default function TutorialItems({ task }: { task: ManagedTask }) {
  const [status, refreshStatus] = useQuery({ query: TutorialStatus, variables: { code: task.code } });
  const [candidates] = useQuery({ query: Decided, variables: { code: task.code }, requestPolicy: "network-only" });
  const [adding, add] = useMutation(AddItem);
  const [removing, remove] = useMutation(RemoveItem);
  const [saving, save] = useMutation(SetPassMark);
  const outcome = useOutcome();
  const markOutcome = useOutcome();
  const tutorial = status.data?.task?.tutorial;
  const items = tutorial?.items ?? [];
  const inTutorial = new Set(items.map((i) => i.exampleId));
  const decided = [
    ...(candidates.data?.task?.accepted?.nodes ?? []),
    ...(candidates.data?.task?.rejected?.nodes ?? []),
  ].filter((e) => !inTutorial.has(e.id));
  const [mark, setMark] = useState<string>(
    task.settings.qualificationPassMark != null ? String(Math.round(task.settings.qualificationPassMark * 100)) : "",
  );
  const reload = () => refreshStatus({ requestPolicy: "network-only" });

  async function savePassMark() {
    const value = mark.trim() ? Number(mark) / 100 : 0;
    if (!Number.isFinite(value)) return markOutcome.fail("The pass mark is a percentage, 50 to 100 (empty: none).");
    const result = await save({ input: { taskCode: task.code, qualificationPassMark: value } });
    if (
      markOutcome.record(
        result.error,
        result.data?.updateTaskSettings,
        "TaskSettingsUpdated",
        value ? `People now need ${Math.round(value * 100)}% before their work counts.` : "No qualification now.",
      )
    )
      reload();
  }

  return (
    <section aria-labelledby="tutorial-owner-title">
      <h2 id="tutorial-owner-title">Tutorial</h2>
      <p className="lead">
        New annotators and validators practise on decided examples: they say whether each label is right and learn at
        once why. With a pass mark, their examples and votes wait until they reach it (never yours). Every trainee sees
        these examples with their labels: never choose one of a hidden set.
      </p>
      <form
        className="card inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void savePassMark();
        }}
      >
        <div className="control">
          <label htmlFor="pass-mark">Pass mark (%)</label>
          <input
            id="pass-mark"
            type="number"
            min={50}
            max={100}
            value={mark}
            onChange={(event) => setMark(event.target.value)}
            aria-describedby="pass-mark-hint"
          />
          <p className="hint" id="pass-mark-hint">
            Empty: the tutorial is practice only.
          </p>
        </div>
        <button type="submit" disabled={saving.fetching}>
          Save the pass mark
        </button>
        <Outcome outcome={markOutcome} />
      </form>

      {status.error && <p role="alert">{transportMessage(status.error)}</p>}
      <h3>In the tutorial ({items.length})</h3>
      {items.length === 0 && <p>No examples yet: add decided ones below.</p>}
      <ol className="rows" aria-label="Tutorial examples">
        {items.map((i) => (
          <li key={i.exampleId} className="row">
            <p>{line({ ...((i.context as object) ?? {}), ...((i.fields as object) ?? {}) })}</p>
            <p className="small">
              Trainees should say the label is <strong>{i.expected === "CORRECT" ? "right" : "wrong"}</strong>
              {i.explanation ? `: ${i.explanation}` : "."}
            </p>
            <button
              type="button"
              className="secondary"
              disabled={removing.fetching}
              onClick={async () => {
                const result = await remove({ input: { exampleId: i.exampleId } });
                if (outcome.record(result.error, result.data?.removeTutorialItem, "TutorialItemRemoved", "Removed."))
                  reload();
              }}
            >
              Remove from the tutorial
            </button>
          </li>
        ))}
      </ol>

      <h3>Decided examples to add</h3>
      {candidates.data && decided.length === 0 && <p>No decided example is left to add.</p>}
      <ul className="rows" aria-label="Decided examples">
        {decided.map((e) => (
          <Candidate
            key={e.id}
            example={e}
            busy={adding.fetching}
            onAdd={async (expected, explanation) => {
              const result = await add({ input: { exampleId: e.id, expected, explanation } });
              if (outcome.record(result.error, result.data?.addTutorialItem, "TutorialItemAdded", "Added.")) reload();
            }}
          />
        ))}
      </ul>
      <Outcome outcome={outcome} />
    </section>
  );
}

function Candidate({
  example,
  busy,
  onAdd,
}: {
  example: { id: string; fields: unknown; status: string };
  busy: boolean;
  onAdd: (expected: ValidationLabel, explanation: string) => void;
}) {
  const [explanation, setExplanation] = useState("");
  const expected = (example.status === "ACCEPTED" ? "CORRECT" : "INCORRECT") as ValidationLabel;
  const id = `why-${example.id}`;
  return (
    <li className="row">
      <p>
        {line(example.fields)} <span className="muted small">({example.status.toLowerCase()})</span>
      </p>
      <div className="control">
        <label htmlFor={id}>Why its label is {expected === "CORRECT" ? "right" : "wrong"}</label>
        <input id={id} value={explanation} maxLength={2000} onChange={(event) => setExplanation(event.target.value)} />
      </div>
      <button type="button" className="secondary" disabled={busy} onClick={() => onAdd(expected, explanation)}>
        Add to the tutorial
      </button>
    </li>
  );
}
