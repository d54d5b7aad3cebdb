import { useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import { transportMessage } from "../lib/errors";
import { percent } from "../lib/format";

const TasksQuery = graphql(`
  query Tasks {
    tasks {
      id
      code
      name
      description
      active
      viewerIsOwner
      currentRound {
        id
        number
        endedAt
        collected
        fooled
        verifiedFooled
        stats {
          vmer
        }
      }
    }
  }
`);

export default function Tasks() {
  const [{ data, error, fetching }] = useQuery({ query: TasksQuery });
  return (
    <section>
      <h1>Tasks</h1>
      <p className="lead">Write examples that fool the model, or check other people's.</p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading tasks…</p>}
      {data && data.tasks.length === 0 && <p>No task is installed on this server.</p>}
      <ul className="cards">
        {data?.tasks.map((task) => {
          const round = task.currentRound;
          const open = task.active && round && !round.endedAt;
          return (
            <li key={task.id} className="card">
              <h2>
                <Link href={`/tasks/${encodeURIComponent(task.code)}`}>{task.name}</Link>
              </h2>
              <p>{task.description}</p>
              {round ? (
                <dl className="counters">
                  <div>
                    <dt>Round</dt>
                    <dd>
                      {round.number}
                      {open ? "" : " (closed)"}
                    </dd>
                  </div>
                  <div>
                    <dt>Collected</dt>
                    <dd>{round.collected}</dd>
                  </div>
                  <div>
                    <dt>Fooled</dt>
                    <dd>{round.fooled}</dd>
                  </div>
                  <div>
                    <dt>Verified</dt>
                    <dd>{round.verifiedFooled}</dd>
                  </div>
                  <div>
                    <dt>vMER</dt>
                    <dd>{percent(round.stats.vmer)}</dd>
                  </div>
                </dl>
              ) : (
                <p className="muted">No round yet.</p>
              )}
              <p className="actions">
                <Link href={`/tasks/${encodeURIComponent(task.code)}`} className="button">
                  Write examples<span className="sr"> for {task.name}</span>
                </Link>
                <Link href={`/validate/${encodeURIComponent(task.code)}`} className="button secondary">
                  Check examples<span className="sr"> of {task.name}</span>
                </Link>
                {task.viewerIsOwner && (
                  <Link href={`/tasks/${encodeURIComponent(task.code)}/manage/rounds`} className="button secondary">
                    Manage<span className="sr"> {task.name}</span>
                  </Link>
                )}
              </p>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
