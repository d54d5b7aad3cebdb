// A round's analytics for its owners: collection over time (a chart, and its table), per annotator and per source,
// each downloadable as CSV. Plain SVG drawn by React, as the board's plot: no style attributes (the app's
// Content-Security-Policy forbids them).
import { useState } from "react";
import { useQuery } from "urql";
import { graphql } from "../../gql";
import type { TimeBucket } from "../../gql/graphql";
import { annotatorsCsv, fillGaps, type Period, periodsCsv } from "../../lib/analytics";
import { saveBlob } from "../../lib/download";
import { transportMessage } from "../../lib/errors";
import { percent } from "../../lib/format";
import { niceTicks } from "../../lib/ticks";
import { seconds } from "../../lib/validators";
import { ScrollBox } from "../ScrollBox";
import { SourceBadge } from "../SourceStats";
import type { ManagedTask } from "./Manage";
import { Select, shortWhen } from "./parts";

const RoundAnalyticsQuery = graphql(`
  query RoundAnalytics($code: String!, $round: Int!, $bucket: TimeBucket!) {
    task(code: $code) {
      id
      round(number: $round) {
        id
        number
        analytics(bucket: $bucket) {
          bucket
          periods {
            start
            end
            collected
            fooled
            verifiedFooled
          }
          annotators {
            user {
              id
              username
            }
            stats {
              collected
              fooled
              verifiedFooled
              vmer
            }
            medianTimeTakenMs
            validations
            validationAgreement
          }
          sources {
            source
            stats {
              collected
              fooled
              verifiedFooled
              vmer
            }
          }
        }
      }
    }
  }
`);

const SERIES = [
  ["collected", "Collected", "#1d4ed8"],
  ["fooled", "Fooled", "#b45309"],
  ["verifiedFooled", "Verified fooling", "#047857"],
] as const;

function download(name: string, text: string) {
  saveBlob(new Blob([text], { type: "text/csv;charset=utf-8" }), name);
}

export default function Analytics({ task }: { task: ManagedTask }) {
  const latest = task.rounds[task.rounds.length - 1]?.number ?? 1;
  const [round, setRound] = useState(latest);
  const [bucket, setBucket] = useState<TimeBucket>("HOUR" as TimeBucket);
  const [{ data, error, fetching }] = useQuery({
    query: RoundAnalyticsQuery,
    variables: { code: task.code, round, bucket },
    requestPolicy: "cache-and-network",
  });
  const analytics = data?.task?.round?.analytics;
  const periods = fillGaps(analytics?.periods ?? []);
  const name = `${task.code}-round-${round}`;
  return (
    <section aria-labelledby="analytics-title">
      <h2 id="analytics-title">Analytics</h2>
      <p className="lead">
        What the round collected over time, who wrote and validated it, and where it came from. Every column adds up to
        the round&rsquo;s counters.
      </p>
      <div className="inline-form">
        <Select label="Round" id="analytics-round" value={round} onChange={(e) => setRound(Number(e.target.value))}>
          {task.rounds.map((r) => (
            <option key={r.id} value={r.number}>
              Round {r.number}
            </option>
          ))}
        </Select>
        <Select
          label="Per"
          id="analytics-bucket"
          value={bucket}
          onChange={(e) => setBucket(e.target.value as TimeBucket)}
        >
          <option value="HOUR">Hour</option>
          <option value="DAY">Day</option>
        </Select>
      </div>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading…</p>}
      {analytics && (
        <>
          <h3>Collection over time</h3>
          {periods.length === 0 ? (
            <p>Nothing collected in this round yet.</p>
          ) : (
            <>
              <CollectionChart periods={periods} per={bucket === "DAY" ? "day" : "hour"} />
              <details>
                <summary>The figures per {bucket === "DAY" ? "day" : "hour"}</summary>
                <ScrollBox label="Collection per period, scrollable">
                  <table className="table">
                    <caption>
                      Collection of round {round} per {bucket === "DAY" ? "day" : "hour"}
                    </caption>
                    <thead>
                      <tr>
                        <th scope="col">From</th>
                        {SERIES.map(([key, title]) => (
                          <th key={key} scope="col">
                            {title}
                          </th>
                        ))}
                      </tr>
                    </thead>
                    <tbody>
                      {(analytics.periods as Period[]).map((p) => (
                        <tr key={p.start}>
                          <td>{shortWhen(p.start)}</td>
                          <td>{p.collected}</td>
                          <td>{p.fooled}</td>
                          <td>{p.verifiedFooled}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </ScrollBox>
              </details>
              <p className="actions">
                <button
                  type="button"
                  className="secondary"
                  onClick={() => download(`${name}-collection.csv`, periodsCsv(analytics.periods))}
                >
                  Download the periods (CSV)
                </button>
              </p>
            </>
          )}

          <h3>Per annotator</h3>
          {analytics.annotators.length === 0 ? (
            <p>Nobody wrote or validated in this round yet.</p>
          ) : (
            <>
              <ScrollBox label="Annotators, scrollable">
                <table className="table">
                  <caption>Annotators of round {round}, most verified first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Annotator</th>
                      <th scope="col">Collected</th>
                      <th scope="col">Fooled</th>
                      <th scope="col">Verified</th>
                      <th scope="col">vMER</th>
                      <th scope="col">Median time</th>
                      <th scope="col">Votes cast</th>
                      <th scope="col">Votes agreeing</th>
                    </tr>
                  </thead>
                  <tbody>
                    {analytics.annotators.map((a) => (
                      <tr key={a.user.id}>
                        <th scope="row">{a.user.username}</th>
                        <td>{a.stats.collected}</td>
                        <td>{a.stats.fooled}</td>
                        <td>{a.stats.verifiedFooled}</td>
                        <td>{percent(a.stats.vmer)}</td>
                        <td>{seconds(a.medianTimeTakenMs)}</td>
                        <td>{a.validations}</td>
                        <td>{percent(a.validationAgreement)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollBox>
              <p className="actions">
                <button
                  type="button"
                  className="secondary"
                  onClick={() => download(`${name}-annotators.csv`, annotatorsCsv(analytics.annotators))}
                >
                  Download the annotators (CSV)
                </button>
              </p>
            </>
          )}

          <h3>Per source</h3>
          <table className="table">
            <caption>Round {round} by where its examples came from</caption>
            <thead>
              <tr>
                <th scope="col">Source</th>
                <th scope="col">Collected</th>
                <th scope="col">Fooled</th>
                <th scope="col">Verified</th>
                <th scope="col">vMER</th>
              </tr>
            </thead>
            <tbody>
              {analytics.sources.map((s) => (
                <tr key={s.source}>
                  <th scope="row">
                    <SourceBadge source={s.source} />
                  </th>
                  <td>{s.stats.collected}</td>
                  <td>{s.stats.fooled}</td>
                  <td>{s.stats.verifiedFooled}</td>
                  <td>{percent(s.stats.vmer)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 36;
const BOTTOM = 24;
const TOP = 8;

/** Three bars per period (collected, fooled, verified fooling) on one scale; its figures are in the table below. */
function CollectionChart({ periods, per }: { periods: readonly Period[]; per: string }) {
  const high = Math.max(1, ...periods.map((p) => p.collected), ...periods.map((p) => p.fooled));
  const nice = niceTicks(0, high, 4);
  const ticks = nice.ticks.filter(Number.isInteger); // counts: no half examples
  const domain = nice.domain;
  const y = (v: number) => TOP + (1 - v / domain[1]) * (HEIGHT - TOP - BOTTOM);
  const slot = (WIDTH - LEFT) / periods.length;
  const bar = Math.min(24, Math.max(1, (slot * 0.8) / SERIES.length));
  const inset = (slot - bar * SERIES.length) / 2;
  const total = (key: (typeof SERIES)[number][0]) => periods.reduce((sum, p) => sum + p[key], 0);
  const summary = `Collected ${total("collected")}, fooled ${total("fooled")}, verified fooling ${total(
    "verifiedFooled",
  )} over ${periods.length} ${per}s`;
  const labelEvery = Math.max(1, Math.ceil(periods.length / 8));
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%" role="img" aria-label={summary}>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={LEFT} x2={WIDTH} y1={y(t)} y2={y(t)} stroke="#d0d5dd" />
            <text x={LEFT - 4} y={y(t) + 4} textAnchor="end" fontSize="11" fill="#444">
              {t}
            </text>
          </g>
        ))}
        {periods.map((p, i) => (
          <g key={p.start}>
            {SERIES.map(([key, title, colour], k) => (
              <rect
                key={key}
                x={LEFT + i * slot + inset + k * bar}
                y={y(p[key])}
                width={bar}
                height={Math.max(0, HEIGHT - BOTTOM - y(p[key]))}
                fill={colour}
              >
                <title>{`${shortWhen(p.start)}: ${p[key]} ${title.toLowerCase()}`}</title>
              </rect>
            ))}
            {i % labelEvery === 0 && (
              <text x={LEFT + i * slot + slot / 2} y={HEIGHT - 6} textAnchor="middle" fontSize="11" fill="#444">
                {shortWhen(p.start)}
              </text>
            )}
          </g>
        ))}
      </svg>
      <figcaption className="small">
        {SERIES.map(([key, title, colour]) => (
          <span key={key}>
            <svg width="12" height="12" aria-hidden="true">
              <rect width="12" height="12" fill={colour} />
            </svg>{" "}
            {title}{" "}
          </span>
        ))}
        <span className="muted">
          (per {per}
          {per === "day" ? ", UTC days" : ""})
        </span>
      </figcaption>
    </figure>
  );
}
