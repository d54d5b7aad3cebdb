// The task's validators as its owners see them: how often each agrees with decided outcomes and with owners'
// overrides, how long they take, how much the crowd agrees per round (Krippendorff's alpha), and each one's weight
// in the quorum, which an owner changes here (0 excludes).
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import { transportMessage } from "../../lib/errors";
import { percent } from "../../lib/format";
import { alphaInWords, belowBar, seconds } from "../../lib/validators";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { Outcome, Select, useOutcome } from "./parts";

const ValidatorQualityQuery = graphql(`
  query ValidatorQuality($code: String!, $round: Int) {
    task(code: $code) {
      id
      settings {
        validationQuorum
      }
      validatorQuality(round: $round) {
        roundNumber
        alpha
        pairedExamples
        validators {
          user {
            id
            username
          }
          weight
          votes
          decidedVotes
          agreedVotes
          agreement
          ownerDecidedVotes
          agreedWithOwnerVotes
          ownerAgreement
          medianTimeTakenMs
        }
        rounds {
          roundNumber
          alpha
          pairedExamples
          votes
        }
      }
    }
  }
`);

const SetWeights = graphql(`
  mutation SetValidatorWeights($input: SetValidatorWeightsInput!) {
    setValidatorWeights(input: $input) {
      __typename
      ... on ValidatorWeightsSet {
        quality {
          roundNumber
          validators {
            user {
              id
            }
            weight
          }
        }
      }
      ... on InvalidInput {
        message
        fieldErrors {
          field
          message
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

export default function Validators({ task }: { task: ManagedTask }) {
  const [round, setRound] = useState<number | null>(null);
  const [{ data, error, fetching }, refresh] = useQuery({
    query: ValidatorQualityQuery,
    variables: { code: task.code, round },
    requestPolicy: "cache-and-network",
  });
  const [state, setWeights] = useMutation(SetWeights);
  const outcome = useOutcome();
  const [bar, setBar] = useState({ agreement: 60, decided: 5 });
  const quality = data?.task?.validatorQuality;
  const validators = quality?.validators ?? [];
  const quorum = data?.task?.settings.validationQuorum;
  const below = belowBar(validators, bar.agreement / 100, bar.decided);

  async function weigh(entries: { userId: string; weight: number }[], words: string) {
    const result = await setWeights({ input: { taskCode: task.code, weights: entries } });
    if (outcome.record(result.error, result.data?.setValidatorWeights, "ValidatorWeightsSet", words))
      refresh({ requestPolicy: "network-only" });
  }

  return (
    <section aria-labelledby="validators-title">
      <h2 id="validators-title">Validators</h2>
      <p className="lead">
        How often each validator&rsquo;s votes point the way the example was then decided, and how they fare where an
        owner decided. Their weight is what their vote counts in the quorum
        {quorum ? ` of ${quorum}` : ""}: 1 for everyone unless you change it; 0 excludes them (their queue empties). A
        new weight counts from each undecided example&rsquo;s next vote.
      </p>
      <Select
        label="Votes of"
        id="validators-round"
        value={round ?? ""}
        onChange={(event) => setRound(event.target.value ? Number(event.target.value) : null)}
      >
        <option value="">Every round</option>
        {task.rounds.map((r) => (
          <option key={r.id} value={r.number}>
            Round {r.number}
          </option>
        ))}
      </Select>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading…</p>}
      {quality && (
        <>
          <p data-alpha>
            <strong>Agreement among validators</strong> (
            {quality.roundNumber ? `round ${quality.roundNumber}` : "every round"}
            ): {alphaInWords(quality.alpha, quality.pairedExamples)}
          </p>
          {quality.rounds.length > 1 && (
            <ul className="small" aria-label="Agreement per round">
              {quality.rounds.map((r) => (
                <li key={r.roundNumber}>
                  Round {r.roundNumber}: {alphaInWords(r.alpha, r.pairedExamples)} · {r.votes} votes
                </li>
              ))}
            </ul>
          )}
          {validators.length === 0 ? (
            <p>No crowd votes {quality.roundNumber ? "in this round" : "yet"}.</p>
          ) : (
            <ScrollBox label={`Validators of ${task.name}, scrollable`}>
              <table className="table">
                <caption>Validators of {task.name}, lowest agreement first</caption>
                <thead>
                  <tr>
                    <th scope="col">Validator</th>
                    <th scope="col">Votes</th>
                    <th scope="col">Agreement with decisions</th>
                    <th scope="col">Agreement with owners</th>
                    <th scope="col">Median time</th>
                    <th scope="col">Weight</th>
                  </tr>
                </thead>
                <tbody>
                  {validators.map((v) => (
                    <tr key={v.user.id}>
                      <th scope="row">{v.user.username}</th>
                      <td>{v.votes}</td>
                      <td>
                        {percent(v.agreement)}
                        <span className="muted small block">
                          {v.agreedVotes} of {v.decidedVotes} decided
                        </span>
                      </td>
                      <td>
                        {percent(v.ownerAgreement)}
                        <span className="muted small block">
                          {v.agreedWithOwnerVotes} of {v.ownerDecidedVotes}
                        </span>
                      </td>
                      <td>{seconds(v.medianTimeTakenMs)}</td>
                      <td>
                        <WeightForm
                          username={v.user.username}
                          weight={v.weight}
                          busy={state.fetching}
                          onSet={(weight) =>
                            weigh(
                              [{ userId: v.user.id, weight }],
                              weight === 0
                                ? `${v.user.username} is excluded.`
                                : `${v.user.username}'s votes now count ${weight}.`,
                            )
                          }
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollBox>
          )}
          <form
            className="card"
            onSubmit={(event) => {
              event.preventDefault();
              if (below.length === 0) {
                outcome.fail("Nobody is below that bar.");
                return;
              }
              void weigh(
                below.map((v) => ({ userId: v.user.id, weight: 0 })),
                `Excluded ${below.map((v) => v.user.username).join(", ")}.`,
              );
            }}
          >
            <h3>Exclude validators below a bar</h3>
            <div className="inline-form">
              <div className="control">
                <label htmlFor="bar-agreement">Agreement under (%)</label>
                <input
                  id="bar-agreement"
                  type="number"
                  min={0}
                  max={100}
                  value={bar.agreement}
                  onChange={(event) => setBar({ ...bar, agreement: Number(event.target.value) })}
                />
              </div>
              <div className="control">
                <label htmlFor="bar-decided">With at least this many decided votes</label>
                <input
                  id="bar-decided"
                  type="number"
                  min={1}
                  value={bar.decided}
                  onChange={(event) => setBar({ ...bar, decided: Number(event.target.value) })}
                />
              </div>
            </div>
            <p className="hint" aria-live="polite">
              {below.length === 0
                ? "Nobody is below that bar."
                : `Would exclude: ${below.map((v) => v.user.username).join(", ")}.`}
            </p>
            <button type="submit" className="secondary danger" disabled={state.fetching || below.length === 0}>
              Exclude them
            </button>
          </form>
        </>
      )}
      <Outcome outcome={outcome} />
    </section>
  );
}

function WeightForm({
  username,
  weight,
  busy,
  onSet,
}: {
  username: string;
  weight: number;
  busy: boolean;
  onSet: (weight: number) => void;
}) {
  const [value, setValue] = useState(String(weight));
  const id = `weight-${username}`;
  return (
    <form
      className="weight-form"
      onSubmit={(event) => {
        event.preventDefault();
        onSet(Number(value));
      }}
    >
      <label htmlFor={id} className="sr">
        Weight of {username}
      </label>
      <input
        id={id}
        type="number"
        min={0}
        max={10}
        step={0.1}
        value={value}
        onChange={(event) => setValue(event.target.value)}
      />{" "}
      <button type="submit" className="secondary" disabled={busy || value === "" || Number(value) === weight}>
        Set
      </button>
      {weight === 0 && <span className="muted small block">excluded</span>}
    </form>
  );
}
