// Leaderboards: pick a task (/leaderboards), then its boards (/leaderboards/:code): the Dynascore board of its
// published models, re-ranked in the browser as the weight sliders move, and the round leaderboard of annotators.
import { useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import { transportMessage } from "../lib/errors";
import { DynascoreBoard } from "./DynascoreBoard";
import { RoundBoard } from "./RoundBoard";
import "./boards.css";

const BoardTasks = graphql(`
  query BoardTasks {
    tasks {
      id
      code
      name
      description
      currentRound {
        id
        number
      }
    }
  }
`);

const BoardTask = graphql(`
  query BoardTask($code: String!) {
    task(code: $code) {
      id
      code
      name
      principalMetric
      currentRound {
        id
        number
      }
      rounds {
        id
        number
        endedAt
      }
    }
  }
`);

export default function Leaderboards({ code }: { code?: string }) {
  return code ? <TaskBoards code={code} /> : <TaskPicker />;
}

function TaskPicker() {
  const [{ data, error, fetching }] = useQuery({ query: BoardTasks });
  return (
    <section>
      <h1>Leaderboards</h1>
      <p className="lead">The models of each task ranked by a Dynascore you weigh yourself, and its annotators.</p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading tasks…</p>}
      <ul className="cards">
        {data?.tasks.map((task) => (
          <li key={task.id} className="card">
            <h2>
              <Link href={`/leaderboards/${encodeURIComponent(task.code)}`}>{task.name}</Link>
            </h2>
            <p>{task.description}</p>
            {task.currentRound && <p className="muted">Round {task.currentRound.number}</p>}
          </li>
        ))}
      </ul>
    </section>
  );
}

function TaskBoards({ code }: { code: string }) {
  const [{ data, error, fetching }] = useQuery({ query: BoardTask, variables: { code } });
  const task = data?.task;
  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (!task)
    return fetching ? (
      <p className="muted">Loading…</p>
    ) : (
      <section>
        <h1>No such task</h1>
        <p>
          <Link href="/leaderboards">See every leaderboard</Link>.
        </p>
      </section>
    );
  return (
    <section>
      <p className="crumbs small">
        <Link href="/leaderboards">All leaderboards</Link>
      </p>
      <h1>Leaderboards: {task.name}</h1>
      <DynascoreBoard code={task.code} />
      <RoundBoard
        code={task.code}
        rounds={task.rounds.map((r) => ({ number: r.number, open: !r.endedAt }))}
        current={task.currentRound?.number ?? null}
      />
    </section>
  );
}
