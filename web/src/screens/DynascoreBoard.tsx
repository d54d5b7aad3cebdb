// The Dynascore board of a task: its published models ranked by a Dynascore whose weights the sliders set (one per
// metric, one per scoring data set). The server sends each model's figures per data set once; every move of a
// slider re-ranks the board here (lib/dynascore.ts computes exactly what the server would), the plot and the CSV
// follow the board as shown, and the weights can be saved as a fork and loaded again.
import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from "react";
import { useClient, useMutation, useQuery, useSubscription } from "urql";
import { Link, useSearch } from "wouter";
import { graphql } from "../gql";
import type { BoardEvaluationsSubscription, MetricDirection } from "../gql/graphql";
import { useAuth } from "../lib/auth";
import { boardCsv } from "../lib/csv";
import { type Axis, computeBoard, type Direction, type DynascoreRow, defaultMetricWeights } from "../lib/dynascore";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import { isUnfinished } from "../lib/live";
import { ProblemBox, submitted, TextInput } from "./Form";
import { ScrollBox } from "./ScrollBox";

const BoardPlot = lazy(() => import("./BoardPlot"));

const BoardBase = graphql(`
  query BoardBase($code: String!) {
    task(code: $code) {
      id
      updatesCursor
      leaderboard {
        taskCode
        principalMetric
        memoryBudgetGb
        datasets
        datasetWeights {
          name
          weight
        }
        metrics {
          name
          description
          direction
          unit
        }
        rows {
          key
          model {
            modelId
            name
            submitter {
              id
              username
            }
          }
          metrics {
            name
            interval {
              low
              high
            }
          }
          datasets {
            dataset
            values {
              name
              value
            }
          }
          gaps {
            dataset
            reason
            detail
          }
        }
      }
    }
  }
`);

/** The task's evaluations as they change: one that ends changes the board, which is read again. */
const BoardEvaluations = graphql(`
  subscription BoardEvaluations($code: String!, $after: String) {
    evaluationUpdated(taskCode: $code, after: $after) {
      cursor
      evaluation {
        id
        status
      }
    }
  }
`);

/** What the board needs of a fork: its name and weights. */
const AdjacentTests = graphql(`
  query AdjacentTests($code: String!, $metricWeights: [WeightInput!], $datasetWeights: [WeightInput!]) {
    task(code: $code) {
      id
      leaderboard(metricWeights: $metricWeights, datasetWeights: $datasetWeights) {
        adjacentTests {
          upperKey
          lowerKey
          datasets
          items
          onlyUpperRight
          onlyLowerRight
          pValue
          significant
        }
      }
    }
  }
`);

export const ForkParts = graphql(`
  fragment ForkParts on LeaderboardFork {
    id
    name
    description
    metricWeights {
      name
      weight
    }
    datasetWeights {
      name
      weight
    }
  }
`);

const MyForks = graphql(`
  query MyForks($code: String!) {
    task(code: $code) {
      id
      viewerLeaderboardForks(first: 50) {
        nodes {
          ...ForkParts
        }
      }
    }
  }
`);

const ForkById = graphql(`
  query ForkById($id: ID!) {
    node(id: $id) {
      id
      ... on LeaderboardFork {
        ...ForkParts
      }
    }
  }
`);

const SaveFork = graphql(`
  mutation SaveFork($input: SaveLeaderboardForkInput!) {
    saveLeaderboardFork(input: $input) {
      __typename
      ... on LeaderboardForkSaved {
        fork {
          ...ForkParts
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

const DeleteFork = graphql(`
  mutation DeleteFork($input: DeleteLeaderboardForkInput!) {
    deleteLeaderboardFork(input: $input) {
      __typename
      ... on LeaderboardItemDeleted {
        id
      }
      ... on Error {
        message
      }
    }
  }
`);

/** McNemar's test between a row and the row ranked just below it (Leaderboard.adjacentTests). */
interface AdjacentTest {
  upperKey: string;
  lowerKey: string;
  datasets: readonly string[];
  items: number;
  onlyUpperRight: number;
  onlyLowerRight: number;
  pValue?: number | null;
  significant: boolean;
}

interface Fork {
  id: string;
  name: string;
  description: string;
  metricWeights: readonly { name: string; weight: number }[];
  datasetWeights: readonly { name: string; weight: number }[];
}

interface BoardAxis extends Axis {
  description: string;
  unit: string | null;
}

interface BoardModel {
  id: string;
  /** What the server breaks ties by (LeaderboardRow.key). */
  key: string;
  name: string;
  submitter: string;
  intervals: Record<string, { low: number; high: number }>;
  scores: Record<string, Record<string, number | null>>;
  /** The scoring sets it lacks figures on, and why (whatever the weights). */
  gaps: readonly { dataset: string; reason: string; detail: string }[];
}

interface BoardData {
  /** Where the task's evaluation updates stand as the board was read (Task.updatesCursor). */
  cursor: string;
  principal: string;
  memoryBudgetGb: number;
  datasets: string[];
  /** The sets the server counts by default: those with figures (a set nobody has figures on yet weighs 0). */
  counted: string[];
  axes: BoardAxis[];
  models: BoardModel[];
}

const DIRECTIONS: Record<MetricDirection, Direction> = {
  HIGHER: "higher",
  LOWER: "lower",
  MEMORY: "memory",
};

const SLIDER_MAX = 10;

/** Everything the board is computed from: the axes and each model's figures on each scoring data set, in one
 * query. */
function useBoardData(code: string) {
  const client = useClient();
  const [data, setData] = useState<BoardData | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let live = true;
    void version;
    (async () => {
      const base = await client.query(BoardBase, { code }, { requestPolicy: "network-only" }).toPromise();
      if (!live) return;
      if (base.error) return setError(transportMessage(base.error));
      const board = base.data?.task?.leaderboard;
      if (!board) return setError("There is no such leaderboard.");
      const models: BoardModel[] = board.rows.map((row) => ({
        id: row.model.modelId,
        key: row.key,
        name: row.model.name,
        submitter: row.model.submitter?.username ?? "",
        intervals: Object.fromEntries(row.metrics.flatMap((m) => (m.interval ? [[m.name, m.interval]] : []))),
        scores: Object.fromEntries(
          row.datasets.map((d) => [d.dataset, Object.fromEntries(d.values.map((v) => [v.name, v.value ?? null]))]),
        ),
        gaps: row.gaps,
      }));
      setError(null);
      setData({
        cursor: base.data?.task?.updatesCursor ?? "",
        principal: board.principalMetric,
        memoryBudgetGb: board.memoryBudgetGb,
        datasets: board.datasets,
        counted: board.datasetWeights.map((w) => w.name),
        axes: board.metrics.map((m) => ({
          name: m.name,
          direction: DIRECTIONS[m.direction],
          description: m.description,
          unit: m.unit ?? null,
        })),
        models,
      });
    })();
    return () => {
      live = false;
    };
  }, [client, code, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  // Evaluations that end while the board is open change it: it is read again (at most once a second).
  const [ended] = useSubscription<BoardEvaluationsSubscription, number>(
    { query: BoardEvaluations, variables: { code, after: data?.cursor }, pause: !data?.cursor },
    (count = 0, event) => count + (isUnfinished(event.evaluationUpdated.evaluation.status) ? 0 : 1),
  );
  const endedCount = ended.data ?? 0;
  useEffect(() => {
    if (!endedCount) return;
    const timer = setTimeout(reload, 1000);
    return () => clearTimeout(timer);
  }, [endedCount, reload]);
  return { data, error, reload };
}

interface Weights {
  metrics: Record<string, number>;
  datasets: Record<string, number>;
}

function defaultWeights(data: BoardData): Weights {
  return {
    metrics: defaultMetricWeights(data.axes, data.principal, data.models),
    datasets: Object.fromEntries(data.datasets.map((d) => [d, data.counted.includes(d) ? 1 : 0])),
  };
}

/** A fork's weights on this board: axes it leaves out keep their default; data sets it leaves out do not count
 * (none named: every set equally). */
function forkWeights(data: BoardData, fork: Fork): Weights {
  const base = defaultWeights(data);
  for (const w of fork.metricWeights) if (w.name in base.metrics) base.metrics[w.name] = w.weight;
  if (fork.datasetWeights.length) {
    for (const d of data.datasets) base.datasets[d] = 0;
    for (const w of fork.datasetWeights) if (w.name in base.datasets) base.datasets[w.name] = w.weight;
  }
  return base;
}

function formatValue(value: number | null | undefined, unit: string | null): string {
  if (value == null) return "–";
  if (unit === "GiB") return value.toPrecision(3);
  if (unit) return value.toFixed(1);
  return value.toFixed(3);
}

const formatScore = (value: number | null) => (value == null ? "–" : value.toFixed(3));

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function DynascoreBoard({ code }: { code: string }) {
  const { data, error, reload } = useBoardData(code);
  const [weights, setWeights] = useState<Weights | null>(null);
  const [fork, setFork] = useState<Fork | null>(null);
  // Whether the weights are the board's defaults: they then follow the board as it is read again (a model's new
  // figures move the default exchange rates); weights someone moved or loaded stay.
  // A fork's link starts not following, so that the first reading of the board cannot put the fork's weights back to
  // the defaults in the same render as it loads them.
  const search = useSearch();
  const forkId = new URLSearchParams(search).get("fork");
  const [followDefaults, setFollowDefaults] = useState(!forkId);
  const [linked] = useQuery({ query: ForkById, variables: { id: forkId ?? "" }, pause: !forkId });

  // Start from the defaults, or from the fork the address names once it is read.
  useEffect(() => {
    if (!data || weights) return;
    if (forkId && linked.fetching) return;
    const node = linked.data?.node;
    if (forkId && node && node.__typename === "LeaderboardFork") {
      setFork(node);
      setFollowDefaults(false);
      setWeights(forkWeights(data, node));
    } else {
      setFollowDefaults(true);
      setWeights(defaultWeights(data));
    }
  }, [data, weights, forkId, linked]);
  useEffect(() => {
    if (data && followDefaults) setWeights((w) => (w ? defaultWeights(data) : w));
  }, [data, followDefaults]);

  const board = useMemo(() => {
    if (!data || !weights) return null;
    return computeBoard(
      data.models.map((m) => ({ key: m.key, scores: m.scores })),
      data.axes,
      {
        principal: data.principal,
        metricWeights: weights.metrics,
        datasetWeights: data.datasets.map((d) => [d, weights.datasets[d] ?? 0] as const),
        memoryBudgetGb: data.memoryBudgetGb,
      },
    );
  }, [data, weights]);

  const byKey = useMemo(() => new Map(data?.models.map((m) => [m.key, m])), [data]);
  const client = useClient();
  // The paired tests hold for the weights they were asked with; moving a slider puts them away.
  const [tests, setTests] = useState<{ weights: string; byUpper: Map<string, AdjacentTest> } | null>(null);
  const [testing, setTesting] = useState<string | null>(null);
  const weightsKey = JSON.stringify(weights);
  const shownTests = tests && tests.weights === weightsKey ? tests.byUpper : null;
  const runTests = async () => {
    if (!weights) return;
    setTesting("Testing neighbouring ranks…");
    const result = await client
      .query(
        AdjacentTests,
        {
          code,
          metricWeights: Object.entries(weights.metrics).map(([name, weight]) => ({ name, weight })),
          datasetWeights: Object.entries(weights.datasets).map(([name, weight]) => ({ name, weight })),
        },
        { requestPolicy: "network-only" },
      )
      .toPromise();
    const found = result.data?.task?.leaderboard?.adjacentTests;
    if (result.error || !found) {
      setTesting(result.error ? transportMessage(result.error) : "There is no such leaderboard.");
      return;
    }
    setTesting(null);
    setTests({ weights: weightsKey, byUpper: new Map(found.map((t) => [t.upperKey, t])) });
  };

  if (error)
    return (
      <section className="board-section" aria-labelledby="models-heading">
        <h2 id="models-heading">Models</h2>
        <p role="alert">{error}</p>
        <button type="button" className="secondary" onClick={reload}>
          Try again
        </button>
      </section>
    );
  if (!data || !weights) return <p className="muted">Loading the leaderboard…</p>;

  const setMetric = (name: string, value: number) => {
    setFollowDefaults(false);
    setWeights((w) => w && { ...w, metrics: { ...w.metrics, [name]: value } });
  };
  const setDataset = (name: string, value: number) => {
    setFollowDefaults(false);
    setWeights((w) => w && { ...w, datasets: { ...w.datasets, [name]: value } });
  };
  const rows = typeof board === "string" || !board ? [] : board.rows;
  const csv = () =>
    boardCsv(
      data.axes.map((a) => a.name),
      rows.map((r) => {
        const model = byKey.get(r.key);
        return {
          rank: r.rank,
          modelId: model?.id ?? "",
          model: model?.name ?? "",
          submitter: model?.submitter ?? "",
          dynascore: r.dynascore,
          values: r.x,
          missing: r.missing,
          gaps: model?.gaps ?? [],
        };
      }),
    );

  return (
    <section className="board-section" aria-labelledby="models-heading">
      <h2 id="models-heading">Models</h2>
      <p className="lead">
        Published models ranked by their Dynascore: every metric counts as much as its weight, converted into{" "}
        {data.principal} at the rate the models on this board trade one for the other. Move the sliders to rank them by
        what matters to you.
      </p>
      {data.datasets.length === 0 ? (
        <p className="notice">This task has no scoring data set yet, so no model can be ranked.</p>
      ) : (
        <div className="board-layout">
          <form className="weights" aria-label="Weights" onSubmit={(e) => e.preventDefault()}>
            <fieldset>
              <legend>Metrics</legend>
              {data.axes.map((axis) => (
                <Slider
                  key={axis.name}
                  id={`metric-${axis.name}`}
                  label={axis.name}
                  hint={[
                    axis.description && (/[.!?]$/.test(axis.description) ? axis.description : `${axis.description}.`),
                    axis.unit && `In ${axis.unit}.`,
                    axis.direction === "higher" ? "Higher is better." : "Lower is better.",
                  ]
                    .filter(Boolean)
                    .join(" ")}
                  value={weights.metrics[axis.name] ?? 0}
                  share={typeof board === "object" && board ? board.metricWeights[axis.name] : undefined}
                  onChange={(v) => setMetric(axis.name, v)}
                />
              ))}
            </fieldset>
            <fieldset>
              <legend>Data sets</legend>
              {data.datasets.map((name) => (
                <Slider
                  key={name}
                  id={`dataset-${name}`}
                  label={name}
                  value={weights.datasets[name] ?? 0}
                  share={typeof board === "object" && board ? (board.datasetWeights[name] ?? 0) : undefined}
                  onChange={(v) => setDataset(name, v)}
                />
              ))}
            </fieldset>
            <p className="actions">
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  setFork(null);
                  setFollowDefaults(true);
                  setWeights(defaultWeights(data));
                }}
              >
                Default weights
              </button>
            </p>
          </form>
          <div className="board-main">
            <div role="status" className="board-status">
              {typeof board === "string" ? (
                <span className="problem">{board}</span>
              ) : (
                <>
                  {fork && <>Weights of the fork “{fork.name}”. </>}
                  {board?.amrsFallback && rows.length > 0 && (
                    <>
                      Fewer than two ranked models differ on {data.principal}, so every exchange rate is 1 and the
                      Dynascore adds figures in their own units.
                    </>
                  )}
                </>
              )}
            </div>
            <BoardTable data={data} rows={rows} byKey={byKey} tests={shownTests} />
            {shownTests && (
              <p className="muted small" data-adjacent-note>
                “Next rank”: McNemar's exact test of each model against the one ranked just below it, on the items of
                the weighted scoring sets the figures come from: ✓ where it is right more often than chance alone
                explains (p &lt; 0.05).
              </p>
            )}
            {testing && (
              <p role="status" className="muted">
                {testing}
              </p>
            )}
            <p className="actions">
              <button
                type="button"
                className="secondary"
                disabled={typeof board === "string"}
                onClick={() => download(`${code}-leaderboard.csv`, csv())}
              >
                Download CSV
              </button>
              <button
                type="button"
                className="secondary"
                disabled={typeof board === "string" || rows.filter((r) => r.rank != null).length < 2}
                onClick={() => void runTests()}
              >
                Test neighbouring ranks
              </button>
              <button type="button" className="link" onClick={reload}>
                Refresh
              </button>
            </p>
            {typeof board === "object" && board && (
              <Suspense fallback={<p className="muted">Loading the plot…</p>}>
                <BoardPlot
                  axes={data.axes.map((a) => a.name).filter((n) => (board.metricWeights[n] ?? 0) > 0)}
                  bars={rows.flatMap((r) =>
                    r.dynascore == null
                      ? []
                      : [{ key: r.key, name: byKey.get(r.key)?.name ?? r.key, total: r.dynascore, parts: r.terms }],
                  )}
                />
              </Suspense>
            )}
          </div>
        </div>
      )}
      <Forks
        code={code}
        weights={weights}
        data={data}
        onLoad={(f) => {
          setFork(f);
          setFollowDefaults(false);
          setWeights(forkWeights(data, f));
        }}
      />
    </section>
  );
}

function Slider({
  id,
  label,
  hint,
  value,
  share,
  onChange,
}: {
  id: string;
  label: string;
  hint?: string;
  value: number;
  share?: number;
  onChange: (value: number) => void;
}) {
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="slider">
      <label htmlFor={id} className="slider-label">
        {label}
      </label>
      <output htmlFor={id} className="slider-value">
        {value} {share !== undefined && <span className="muted">({(share * 100).toFixed(0)}%)</span>}
      </output>
      <input
        id={id}
        type="range"
        min={0}
        max={Math.max(SLIDER_MAX, Math.ceil(value))}
        step={0.5}
        value={value}
        aria-describedby={hintId}
        onChange={(e) => onChange(Number(e.currentTarget.value))}
      />
      {hint && (
        <p className="hint small" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}

function BoardTable({
  data,
  rows,
  byKey,
  tests,
}: {
  data: BoardData;
  rows: readonly DynascoreRow[];
  byKey: Map<string, BoardModel>;
  tests: Map<string, AdjacentTest> | null;
}) {
  if (data.models.length === 0) return <p>No model is published on this task yet.</p>;
  return (
    <ScrollBox label="Models, scrollable">
      <table className="board" data-board="models">
        <caption className="sr">Models ranked by Dynascore</caption>
        <thead>
          <tr>
            <th scope="col">Rank</th>
            <th scope="col">Model</th>
            <th scope="col">Submitter</th>
            <th scope="col" className="num">
              Dynascore
            </th>
            {tests && <th scope="col">Next rank</th>}
            {data.axes.map((a) => (
              <th scope="col" className="num" key={a.name}>
                {a.name}
                {a.unit && <span className="unit"> ({a.unit})</span>}
              </th>
            ))}
            <th scope="col">Missing</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => {
            const model = byKey.get(r.key);
            const next = rows[i + 1];
            const test = tests?.get(r.key);
            return (
              <tr key={r.key} data-model-id={r.key}>
                <td className="num">{r.rank ?? "–"}</td>
                <th scope="row">{model?.name}</th>
                <td>{model?.submitter || <span className="muted">anonymous</span>}</td>
                <td className="num" data-dynascore>
                  {formatScore(r.dynascore)}
                </td>
                {tests && (
                  <td data-adjacent>
                    {test && next && test.lowerKey === next.key ? <AdjacentCell test={test} /> : null}
                  </td>
                )}
                {data.axes.map((a) => {
                  const interval = model?.intervals[a.name];
                  return (
                    <td className="num" key={a.name}>
                      {formatValue(r.x[a.name], a.unit)}
                      {interval && r.x[a.name] != null && (
                        <span className="interval">
                          {" "}
                          [{formatValue(interval.low, a.unit)}, {formatValue(interval.high, a.unit)}]
                          <span className="sr"> 95% interval</span>
                        </span>
                      )}
                    </td>
                  );
                })}
                <td>
                  {r.missing.length ? r.missing.join(", ") : <span className="muted">none</span>}
                  {model?.gaps.map((g) => (
                    <span className="gap small" key={g.dataset}>
                      <br />
                      {g.dataset}: {g.detail}
                    </span>
                  ))}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ScrollBox>
  );
}

function AdjacentCell({ test }: { test: AdjacentTest }) {
  if (test.items === 0 || test.pValue == null) return <span className="muted">no items in common</span>;
  const p = test.pValue < 0.001 ? "< 0.001" : `= ${test.pValue.toFixed(3)}`;
  const split = `right only here on ${test.onlyUpperRight}, only below on ${test.onlyLowerRight} of ${test.items} items`;
  return test.significant ? (
    <span title={split}>
      ✓ ahead beyond chance <span className="small">(p {p})</span>
    </span>
  ) : (
    <span className="muted" title={split}>
      not beyond chance <span className="small">(p {p})</span>
    </span>
  );
}

function Forks({
  code,
  weights,
  data,
  onLoad,
}: {
  code: string;
  weights: Weights;
  data: BoardData;
  onLoad: (fork: Fork) => void;
}) {
  const { session } = useAuth();
  const [list, refresh] = useQuery({ query: MyForks, variables: { code }, pause: !session });
  const [saving, save] = useMutation(SaveFork);
  const [, remove] = useMutation(DeleteFork);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [listProblem, setListProblem] = useState<Problem | null>(null);
  const [saved, setSaved] = useState<Fork | null>(null);
  if (!session)
    return (
      <section className="panel forks" aria-labelledby="forks-heading">
        <h3 id="forks-heading">Forks</h3>
        <p>
          <Link href="/signin">Sign in</Link> to save these weights as a fork and load your forks again.
        </p>
      </section>
    );
  const forks = list.data?.task?.viewerLeaderboardForks?.nodes ?? [];
  return (
    <section className="panel forks" aria-labelledby="forks-heading">
      <h3 id="forks-heading">Forks</h3>
      <form
        aria-label="Save a fork"
        onSubmit={submitted(async (form) => {
          setSaved(null);
          const result = await save({
            input: {
              taskCode: code,
              name: String(form.get("name") ?? "").trim(),
              description: String(form.get("description") ?? "").trim(),
              metricWeights: data.axes.map((a) => ({ name: a.name, weight: weights.metrics[a.name] ?? 0 })),
              datasetWeights: data.datasets.map((d) => ({ name: d, weight: weights.datasets[d] ?? 0 })),
            },
          });
          const answer = result.data?.saveLeaderboardFork;
          const failed = problemOf(result.error, answer, "LeaderboardForkSaved", ["name", "description"]);
          setProblem(failed);
          if (!failed && answer?.__typename === "LeaderboardForkSaved") {
            setSaved(answer.fork);
            refresh({ requestPolicy: "network-only" });
          }
        })}
      >
        <p className="hint">Save the weights above under a name; anyone can open the fork's link.</p>
        <div className="fork-fields">
          <TextInput label="Fork name" name="name" required maxLength={100} error={problem?.fields.name} />
          <TextInput
            label="What it stresses (optional)"
            id="fork-description"
            name="description"
            maxLength={2000}
            error={problem?.fields.description}
          />
        </div>
        <button type="submit" disabled={saving.fetching}>
          Save fork
        </button>
        <ProblemBox problem={problem} />
        <div role="status">
          {saved && (
            <>
              Saved the fork “{saved.name}”.{" "}
              <Link href={`/leaderboards/${encodeURIComponent(code)}?fork=${encodeURIComponent(saved.id)}`}>
                Its link
              </Link>
            </>
          )}
        </div>
      </form>
      <h4>Your forks</h4>
      {list.error && <p role="alert">{transportMessage(list.error)}</p>}
      {forks.length === 0 ? (
        <p className="muted">You have no fork of this board yet.</p>
      ) : (
        <ul className="fork-list">
          {forks.map((f) => (
            <li key={f.id}>
              <span>
                <strong>{f.name}</strong>
                {f.description && <span className="muted"> — {f.description}</span>}
              </span>
              <span className="actions">
                <button type="button" className="secondary" onClick={() => onLoad(f)}>
                  Load<span className="sr"> fork {f.name}</span>
                </button>
                <button
                  type="button"
                  className="secondary"
                  onClick={async () => {
                    const result = await remove({ input: { id: f.id } });
                    const failed = problemOf(
                      result.error,
                      result.data?.deleteLeaderboardFork,
                      "LeaderboardItemDeleted",
                    );
                    setListProblem(failed);
                    if (!failed) refresh({ requestPolicy: "network-only" });
                  }}
                >
                  Delete<span className="sr"> fork {f.name}</span>
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
      <ProblemBox problem={listProblem} />
    </section>
  );
}
