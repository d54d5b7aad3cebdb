import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { ExampleSource, ValidationLabel } from "../../gql/graphql";
import { transportMessage } from "../../lib/errors";
import { fieldTitle, showValue } from "../../lib/fields";
import { SourceBadge } from "../SourceStats";
import type { ManagedTask } from "./Manage";
import { Outcome, useOutcome, when } from "./parts";

const FlaggedExamples = graphql(`
  query FlaggedExamples($code: String!) {
    task(code: $code) {
      id
      examples(status: FLAGGED, first: 50) {
        totalCount
        nodes {
          id
          fields
          status
          flagReason
          createdAt
          source
          adversary
          round {
            id
            number
          }
          author {
            id
            username
          }
          validations {
            id
            label
            reason
            createdAt
            validator {
              id
              username
            }
          }
        }
      }
    }
  }
`);

const Decide = graphql(`
  mutation DecideFlagged($input: ValidateExampleInput!) {
    validateExample(input: $input) {
      __typename
      ... on ValidationRecorded {
        decided
        example {
          id
          status
        }
      }
      ... on Error {
        message
      }
      ... on RateLimited {
        retryAfterSeconds
      }
    }
  }
`);

const NearDuplicates = graphql(`
  query NearDuplicates($code: String!) {
    task(code: $code) {
      id
      currentRound {
        id
        number
        nearDuplicates {
          similarity
          examples {
            id
            fields
            status
            author {
              id
              username
            }
          }
        }
      }
    }
  }
`);

/** The current round's near-duplicate clusters: examples their writers sent although close to an earlier one. */
function NearDuplicateClusters({ task }: { task: ManagedTask }) {
  const [{ data, error }] = useQuery({
    query: NearDuplicates,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const round = data?.task?.currentRound;
  const clusters = round?.nearDuplicates ?? [];
  return (
    <section aria-labelledby="near-title">
      <h3 id="near-title">Near-duplicates{round ? ` in round ${round.number}` : ""}</h3>
      <p className="muted small">
        {task.settings.nearDuplicateThreshold != null
          ? `Examples sent although at least ${Math.round(task.settings.nearDuplicateThreshold * 100)}% similar to an earlier fooling example (Settings), grouped with it.`
          : "The check is off: set a near-duplicate similarity in Settings to flag near-copies to their writers."}
      </p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {data && clusters.length === 0 && <p>No near-duplicates.</p>}
      <ul className="rows" aria-label="Near-duplicate groups">
        {clusters.map((c) => (
          <li key={c.examples.map((e) => e.id).join()} className="row">
            <p className="small">
              {c.examples.length} examples, up to {Math.round(c.similarity * 100)}% similar
            </p>
            <ul className="small">
              {c.examples.map((e) => (
                <li key={e.id}>
                  {Object.values((e.fields ?? {}) as Record<string, unknown>)
                    .filter((v) => typeof v === "string")
                    .join(" · ")}{" "}
                  <span className="muted">
                    ({e.author?.username ?? "someone"}, {e.status.toLowerCase()})
                  </span>
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </section>
  );
}

export default function Flagged({ task }: { task: ManagedTask }) {
  const [{ data, error, fetching }, refresh] = useQuery({
    query: FlaggedExamples,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const examples = data?.task?.examples?.nodes ?? [];
  return (
    <section aria-labelledby="flagged-title">
      <h2 id="flagged-title">Flagged examples{data?.task?.examples ? ` (${data.task.examples.totalCount})` : ""}</h2>
      <p className="lead">
        Examples someone flagged wait here for an owner: accept or reject each one (your vote decides alone).
      </p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading…</p>}
      {data && examples.length === 0 && <p>No flagged examples.</p>}
      <ul className="rows" aria-label="Flagged examples">
        {examples.map((e) => (
          <FlaggedRow key={e.id} example={e} onDecided={() => refresh({ requestPolicy: "network-only" })} />
        ))}
      </ul>
      <NearDuplicateClusters task={task} />
    </section>
  );
}

function FlaggedRow({
  example,
  onDecided,
}: {
  example: {
    id: string;
    fields: unknown;
    flagReason?: string | null;
    createdAt: string;
    source?: ExampleSource | null;
    adversary?: string | null;
    round: { number: number };
    author?: { username: string } | null;
    validations?:
      | readonly { id: string; label: ValidationLabel; reason?: string | null; validator: { username: string } }[]
      | null;
  };
  onDecided: () => void;
}) {
  const [state, decide] = useMutation(Decide);
  const outcome = useOutcome();
  const fields = (example.fields ?? {}) as Record<string, unknown>;
  const flags = (example.validations ?? []).filter((v) => v.label === "FLAGGED" && v.reason);

  async function vote(label: ValidationLabel) {
    const result = await decide({ input: { id: example.id, label } });
    const words = label === "CORRECT" ? "Accepted." : "Rejected.";
    if (outcome.record(result.error, result.data?.validateExample, "ValidationRecorded", words)) onDecided();
  }

  return (
    <li className="row">
      <dl className="example">
        {Object.entries(fields).map(([name, value]) => (
          <div key={name}>
            <dt>{fieldTitle(name)}</dt>
            <dd>{showValue(value)}</dd>
          </div>
        ))}
      </dl>
      <p className="reason">
        <strong>Why it was flagged:</strong> {example.flagReason || "no reason given"}
      </p>
      {flags.length > 0 && (
        <ul className="small">
          {flags.map((v) => (
            <li key={v.id}>
              {v.validator.username}: {v.reason}
            </li>
          ))}
        </ul>
      )}
      <p className="muted small">
        Round {example.round.number} · by {example.author?.username ?? "someone"} · {when(example.createdAt)}
        {example.source && (
          <>
            {" "}
            · <SourceBadge source={example.source} adversary={example.adversary} />
          </>
        )}
      </p>
      <p className="actions">
        <button type="button" disabled={state.fetching} onClick={() => vote("CORRECT")}>
          Accept
        </button>
        <button type="button" className="secondary" disabled={state.fetching} onClick={() => vote("INCORRECT")}>
          Reject
        </button>
      </p>
      <Outcome outcome={outcome} />
    </li>
  );
}
