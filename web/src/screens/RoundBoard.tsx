// The round leaderboard of annotators: one round of a task (the current one unless another is chosen), ranked by
// verified fooling examples, then fooling examples, then examples collected, a page at a time.
import { useState } from "react";
import { useQuery } from "urql";
import { graphql } from "../gql";
import { transportMessage } from "../lib/errors";
import { percent } from "../lib/format";
import { ScrollBox } from "./ScrollBox";
import { SourceStatsTable } from "./SourceStats";

const PAGE = 20;

const RoundLeaderboard = graphql(`
  query RoundLeaderboard($code: String!, $number: Int, $first: Int, $after: String) {
    round(taskCode: $code, number: $number) {
      id
      number
      endedAt
      statsBySource {
        source
        stats {
          collected
          fooled
          verifiedFooled
          vmer
        }
      }
      leaderboard(first: $first, after: $after) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        nodes {
          rank
          username
          userId
          stats {
            collected
            fooled
            verifiedFooled
            accepted
            vmer
          }
        }
      }
    }
  }
`);

export function RoundBoard({
  code,
  rounds,
  current,
}: {
  code: string;
  rounds: readonly { number: number; open: boolean }[];
  current: number | null;
}) {
  const [number, setNumber] = useState<number | null>(current);
  // The cursors of the pages before this one (null: the first page), to page back.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1];
  const [{ data, error, fetching }] = useQuery({
    query: RoundLeaderboard,
    variables: { code, number, first: PAGE, after },
    requestPolicy: "cache-and-network",
    pause: number === null,
  });
  const board = data?.round?.leaderboard;
  const bySource = data?.round?.statsBySource;
  return (
    <section className="board-section" aria-labelledby="annotators-heading">
      <h2 id="annotators-heading">Annotators</h2>
      <p className="lead">Ranked by verified fooling examples, then fooling examples, then examples written.</p>
      {rounds.length === 0 ? (
        <p>This task has no round yet.</p>
      ) : (
        <>
          <div className="control inline">
            <label htmlFor="round-choice">Round</label>
            <select
              id="round-choice"
              value={number ?? ""}
              onChange={(e) => {
                setNumber(Number(e.currentTarget.value));
                setCursors([null]);
              }}
            >
              {[...rounds]
                .sort((a, b) => b.number - a.number)
                .map((r) => (
                  <option key={r.number} value={r.number}>
                    Round {r.number}
                    {r.open ? " (open)" : ""}
                  </option>
                ))}
            </select>
          </div>
          {error && <p role="alert">{transportMessage(error)}</p>}
          {fetching && !board && <p className="muted">Loading the round's annotators…</p>}
          {board && board.totalCount === 0 && <p>Nobody has written an example in this round yet.</p>}
          {board && board.totalCount > 0 && (
            <>
              <ScrollBox label="Annotators, scrollable">
                <table className="board">
                  <caption className="sr">
                    Annotators of round {number}, {board.totalCount} in all
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Rank</th>
                      <th scope="col">Annotator</th>
                      <th scope="col" className="num">
                        Verified fooling
                      </th>
                      <th scope="col" className="num">
                        Fooling
                      </th>
                      <th scope="col" className="num">
                        Written
                      </th>
                      <th scope="col" className="num">
                        Accepted
                      </th>
                      <th scope="col" className="num">
                        vMER
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {board.nodes.map((entry) => (
                      <tr key={entry.userId}>
                        <td className="num">{entry.rank}</td>
                        <th scope="row">{entry.username}</th>
                        <td className="num">{entry.stats.verifiedFooled}</td>
                        <td className="num">{entry.stats.fooled}</td>
                        <td className="num">{entry.stats.collected}</td>
                        <td className="num">{entry.stats.accepted}</td>
                        <td className="num">{percent(entry.stats.vmer)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollBox>
              {(cursors.length > 1 || board.pageInfo.hasNextPage) && (
                <p className="actions">
                  <button
                    type="button"
                    className="secondary"
                    disabled={cursors.length <= 1}
                    onClick={() => setCursors((c) => c.slice(0, -1))}
                  >
                    Previous annotators
                  </button>
                  <button
                    type="button"
                    className="secondary"
                    disabled={!board.pageInfo.hasNextPage}
                    onClick={() => setCursors((c) => [...c, board.pageInfo.endCursor ?? null])}
                  >
                    Next annotators
                  </button>
                </p>
              )}
            </>
          )}
          {bySource && (
            <>
              <h3 className="by-source-title">By source</h3>
              <p className="hint">
                Human: written alone. Assisted: written from a machine adversary's suggestion. Machine: proposed by an
                adversary and validated like any other.
              </p>
              <SourceStatsTable rows={bySource} caption={`Round ${number} by source`} />
            </>
          )}
        </>
      )}
    </section>
  );
}
