// Models: choose a task (/models), its models, mine and published, with the form to submit one (/models/:code), and
// one model with its live evaluation progress and results (/models/:code/:id, in ModelDetail).
import { useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { transportMessage } from "../lib/errors";
import { type ModelStatus, modelHref, modelStatusWords } from "../lib/models";
import ModelDetail from "./ModelDetail";
import ModelSubmit from "./ModelSubmit";
import "./models.css";

const ModelsTasks = graphql(`
  query ModelsTasks {
    tasks {
      id
      code
      name
      description
    }
  }
`);

export const ModelRowParts = graphql(`
  fragment ModelRowParts on Model {
    id
    name
    backend
    published
    anonymous
    status
    createdAt
    submitter {
      id
      username
    }
  }
`);

const TaskModels = graphql(`
  query TaskModels($code: String!, $signedIn: Boolean!) {
    task(code: $code) {
      id
      code
      name
      labels
      mine: models(mine: true, first: 50) @include(if: $signedIn) {
        nodes {
          ...ModelRowParts
        }
        totalCount
      }
      published: models(published: true, first: 50) {
        nodes {
          ...ModelRowParts
        }
        totalCount
      }
    }
  }
`);

export default function Models({ code, id }: { code?: string; id?: string }) {
  if (code && id) return <ModelDetail code={safeDecode(code)} id={safeDecode(id)} />;
  if (code) return <TaskModelList code={safeDecode(code)} />;
  return <TaskPicker />;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function TaskPicker() {
  const [{ data, error, fetching }] = useQuery({ query: ModelsTasks });
  return (
    <section>
      <h1>Models</h1>
      <p className="lead">
        Submit a model to a task, follow its evaluation live, see its results per data set and put it on the
        leaderboard. Choose a task:
      </p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading tasks…</p>}
      <ul className="cards">
        {data?.tasks.map((task) => (
          <li key={task.id} className="card">
            <h2>
              <Link href={`/models/${encodeURIComponent(task.code)}`}>{task.name}</Link>
            </h2>
            <p>{task.description}</p>
          </li>
        ))}
      </ul>
    </section>
  );
}

type Row = {
  id: string;
  name: string;
  backend?: string | null;
  published: boolean;
  anonymous: boolean;
  status: ModelStatus;
  createdAt: string;
  submitter?: { username: string } | null;
};

function TaskModelList({ code }: { code: string }) {
  const { session } = useAuth();
  const [{ data, error, fetching }] = useQuery({
    query: TaskModels,
    variables: { code, signedIn: Boolean(session) },
    requestPolicy: "cache-and-network",
  });
  const task = data?.task;
  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (!task)
    return fetching ? (
      <p className="muted">Loading…</p>
    ) : (
      <section>
        <h1>No such task</h1>
        <p>
          <Link href="/models">Choose another task</Link>.
        </p>
      </section>
    );
  return (
    <section>
      <p className="crumbs">
        <Link href="/models">Models</Link> / {task.name}
      </p>
      <h1>Models: {task.name}</h1>
      <div className="models-layout">
        <div>
          {session ? (
            <ModelTable
              title="My models"
              rows={task.mine?.nodes ?? []}
              code={code}
              empty="You have not submitted a model to this task yet."
            />
          ) : (
            <p className="notice">
              <Link href="/signin">Sign in</Link> or <Link href="/register">register</Link> to submit a model.
            </p>
          )}
          <ModelTable
            title="Published models"
            rows={task.published?.nodes ?? []}
            code={code}
            empty="No model is published on this task yet."
          />
        </div>
        {session && <ModelSubmit code={code} labels={task.labels} />}
      </div>
    </section>
  );
}

function ModelTable({
  title,
  rows,
  code,
  empty,
}: {
  title: string;
  rows: readonly Row[];
  code: string;
  empty: string;
}) {
  const id = `table-${title.toLowerCase().replace(/\W+/g, "-")}`;
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {rows.length === 0 ? (
        <p className="muted">{empty}</p>
      ) : (
        <div className="table-scroll">
          <table className="data">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Backend</th>
                <th scope="col">Submitted</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.id}>
                  <th scope="row">
                    <Link href={modelHref(code, row.id)}>{row.name}</Link>
                    {row.published && <span className="tag">published</span>}
                  </th>
                  <td>{modelStatusWords[row.status]}</td>
                  <td>{row.backend ?? "predictions"}</td>
                  <td>
                    <time dateTime={row.createdAt}>{new Date(row.createdAt).toLocaleDateString()}</time>
                    {row.submitter && <span className="muted"> by {row.submitter.username}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
