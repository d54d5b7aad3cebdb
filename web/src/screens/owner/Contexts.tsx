import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import { useAuth } from "../../lib/auth";
import { problemOf } from "../../lib/errors";
import { fieldTitle, showValue } from "../../lib/fields";
import { uploadFile } from "../../lib/upload";
import { submitted, TextInput } from "../Form";
import type { ManagedTask } from "./Manage";
import { AskTwice, FileInput, fileOf, Outcome, TextArea, textOf, useOutcome } from "./parts";

const PAGE = 10;

const ContextList = graphql(`
  query OwnerContexts($code: String!, $round: Int, $first: Int, $after: String, $last: Int, $before: String) {
    task(code: $code) {
      id
      contexts(round: $round, first: $first, after: $after, last: $last, before: $before) {
        totalCount
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
        nodes {
          id
          fields
          tag
          totalUsed
          retired
        }
      }
    }
  }
`);

const UploadContexts = graphql(`
  mutation UploadContexts($input: UploadContextsInput!) {
    uploadContexts(input: $input) {
      __typename
      ... on ContextsAdded {
        ids
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

const UpdateContext = graphql(`
  mutation UpdateContext($input: UpdateContextInput!) {
    updateContext(input: $input) {
      __typename
      ... on ContextUpdated {
        context {
          id
          fields
          tag
          totalUsed
          retired
        }
        previous {
          id
          retired
          successor {
            id
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

const DeleteContext = graphql(`
  mutation DeleteContext($input: DeleteContextInput!) {
    deleteContext(input: $input) {
      __typename
      ... on ContextDeleted {
        context {
          id
          retired
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

type Page = { first: number; after?: string } | { last: number; before?: string };

export default function Contexts({ task }: { task: ManagedTask }) {
  const { session } = useAuth();
  const roundNumber = task.currentRound?.number ?? null;
  const [page, setPage] = useState<Page>({ first: PAGE });
  const [list, refresh] = useQuery({
    query: ContextList,
    variables: { code: task.code, round: roundNumber, ...page },
    requestPolicy: "cache-and-network",
  });
  const upload = useOutcome();
  const [sending, setSending] = useState(false);
  const contextFields = task.fields.filter((f) => f.role === "CONTEXT");
  const connection = list.data?.task?.contexts;
  const reload = () => refresh({ requestPolicy: "network-only" });

  async function send(form: FormData, element: HTMLFormElement) {
    const file = fileOf(form);
    if (!file) return upload.fail("Choose a JSONL or CSV file of contexts first.");
    const tag = textOf(form, "tag");
    setSending(true);
    const answer = await uploadFile(
      session?.token ?? null,
      UploadContexts,
      { input: { taskCode: task.code, file, tag: tag || null } },
      file,
    );
    setSending(false);
    if (answer.problem !== undefined) return upload.fail(answer.problem);
    const result = answer.data.uploadContexts;
    const failed = problemOf(undefined, result, "ContextsAdded");
    if (failed) return upload.fail(failed.message);
    const count = result.__typename === "ContextsAdded" ? result.ids.length : 0;
    upload.succeed(`Added ${count} context${count === 1 ? "" : "s"} from ${file.name} to round ${roundNumber}.`);
    element.reset();
    setPage({ first: PAGE });
    reload();
  }

  return (
    <section aria-labelledby="contexts-title">
      <h2 id="contexts-title">Contexts</h2>
      {contextFields.length === 0 ? (
        <p>This task has no context fields: annotators write from scratch, so there is nothing to upload.</p>
      ) : (
        <form
          className="card"
          onSubmit={(event) => {
            event.preventDefault();
            void send(new FormData(event.currentTarget), event.currentTarget);
          }}
        >
          <h3>Upload contexts to round {roundNumber}</h3>
          <FileInput
            label="Contexts file"
            id="contexts-file"
            accept=".jsonl,.ndjson,.csv"
            hint={`JSONL (one object a line) or CSV (a header row) with ${contextFields
              .map((f) => f.name)
              .join(", ")} and an optional tag. All or nothing: a wrong row adds none.`}
          />
          <TextInput label="Tag (optional)" id="contexts-tag" name="tag" maxLength={100} />
          <button type="submit" disabled={sending}>
            {sending ? "Uploading…" : "Upload contexts"}
          </button>
          <Outcome outcome={upload} />
        </form>
      )}

      <h3 id="contexts-list-title">
        Contexts of round {roundNumber}
        {connection ? ` (${connection.totalCount})` : ""}
      </h3>
      {list.error && <p role="alert">{list.error.message}</p>}
      {connection && connection.nodes.length === 0 && <p className="muted">No contexts in this round.</p>}
      <ul className="rows" aria-labelledby="contexts-list-title">
        {connection?.nodes.map((c) => (
          <ContextRow key={c.id} context={c} fields={contextFields.map((f) => f.name)} onChanged={reload} />
        ))}
      </ul>
      {connection && (connection.pageInfo.hasPreviousPage || connection.pageInfo.hasNextPage) && (
        <nav aria-label="Pages of contexts" className="actions">
          <button
            type="button"
            className="secondary"
            disabled={!connection.pageInfo.hasPreviousPage}
            onClick={() => setPage({ last: PAGE, before: connection.pageInfo.startCursor ?? undefined })}
          >
            Previous page
          </button>
          <button
            type="button"
            className="secondary"
            disabled={!connection.pageInfo.hasNextPage}
            onClick={() => setPage({ first: PAGE, after: connection.pageInfo.endCursor ?? undefined })}
          >
            Next page
          </button>
        </nav>
      )}
    </section>
  );
}

function ContextRow({
  context,
  fields,
  onChanged,
}: {
  context: { id: string; fields: unknown; tag?: string | null; totalUsed: number };
  fields: string[];
  onChanged: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const [updating, update] = useMutation(UpdateContext);
  const [deleting, remove] = useMutation(DeleteContext);
  const outcome = useOutcome();
  const values = (context.fields ?? {}) as Record<string, unknown>;
  const summary = showValue(values[fields[0] ?? ""]) || JSON.stringify(values);

  async function save(form: FormData) {
    const next: Record<string, string> = {};
    for (const name of fields) next[name] = String(form.get(`f-${name}`) ?? "");
    const tag = textOf(form, "tag");
    const result = await update({ input: { id: context.id, fields: next, tag: tag || null } });
    if (outcome.record(result.error, result.data?.updateContext, "ContextUpdated", "Saved as a new context.")) {
      setEditing(false);
      onChanged();
    }
  }

  async function retire() {
    const result = await remove({ input: { id: context.id } });
    if (outcome.record(result.error, result.data?.deleteContext, "ContextDeleted", "Retired.")) onChanged();
  }

  const label = summary.length > 60 ? `${summary.slice(0, 60)}…` : summary;
  return (
    <li className="row">
      {fields.map((name) => (
        <p key={name} className="row-text">
          {fields.length > 1 && <span className="muted">{fieldTitle(name)}: </span>}
          {showValue(values[name])}
        </p>
      ))}
      <p className="muted small">
        {context.tag ? `Tag ${context.tag} · ` : ""}used {context.totalUsed} time{context.totalUsed === 1 ? "" : "s"}
      </p>
      <p className="actions">
        <button
          type="button"
          className="secondary"
          aria-expanded={editing}
          onClick={() => setEditing(!editing)}
          aria-label={`Edit context: ${label}`}
        >
          Edit
        </button>
        <AskTwice
          label={`Retire context: ${label}`}
          confirm="Yes, retire it"
          busy={deleting.fetching}
          onConfirm={() => void retire()}
          className="secondary"
        >
          Retire
        </AskTwice>
      </p>
      {editing && (
        <form onSubmit={submitted(save)} className="panel">
          {fields.map((name) => (
            <TextArea
              key={name}
              label={fieldTitle(name)}
              id={`ctx-${context.id}-${name}`}
              name={`f-${name}`}
              defaultValue={showValue(values[name])}
            />
          ))}
          <TextInput label="Tag" id={`ctx-${context.id}-tag`} name="tag" defaultValue={context.tag ?? ""} />
          <button type="submit" disabled={updating.fetching}>
            Save context
          </button>
        </form>
      )}
      <Outcome outcome={outcome} />
    </li>
  );
}
