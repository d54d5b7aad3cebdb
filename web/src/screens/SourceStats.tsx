// Where examples came from (HUMAN, ASSISTED, MACHINE): a small badge for one example, and a round's counters split
// by source (Round.statsBySource).
import type { ExampleSource } from "../gql/graphql";
import { percent } from "../lib/format";
import { sourceTitle, sourceWords } from "../lib/suggestions";
import { ScrollBox } from "./ScrollBox";

/** One example's source, with the adversary that helped or wrote it. */
export function SourceBadge({ source, adversary }: { source: ExampleSource; adversary?: string | null }) {
  return (
    <span className={`chip source-${source.toLowerCase()}`} data-source={source}>
      {sourceWords(source, adversary)}
    </span>
  );
}

export interface SourceRow {
  source: ExampleSource;
  stats: { collected: number; fooled: number; verifiedFooled: number; vmer?: number | null };
}

/** A round's counters by source: one row each for Human, Assisted and Machine. */
export function SourceStatsTable({ rows, caption }: { rows: readonly SourceRow[]; caption: string }) {
  return (
    <div className="by-source-wrap">
      <ScrollBox label={`${caption}, scrollable`}>
        <table className="board by-source">
          <caption className="sr">{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col" className="num">
                Collected
              </th>
              <th scope="col" className="num">
                Fooled
              </th>
              <th scope="col" className="num">
                Verified fooled
              </th>
              <th scope="col" className="num">
                vMER
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.source} data-source={row.source}>
                <th scope="row">{sourceTitle(row.source)}</th>
                <td className="num">{row.stats.collected}</td>
                <td className="num">{row.stats.fooled}</td>
                <td className="num">{row.stats.verifiedFooled}</td>
                <td className="num">{percent(row.stats.vmer)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
    </div>
  );
}
