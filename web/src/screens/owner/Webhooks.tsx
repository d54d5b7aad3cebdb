import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { WebhookEvent } from "../../gql/graphql";
import { transportMessage } from "../../lib/errors";
import { submitted, TextInput } from "../Form";
import type { ManagedTask } from "./Manage";
import { AskTwice, Outcome, textOf, useOutcome, when } from "./parts";

const WebhookList = graphql(`
  query OwnerWebhooks($code: String!) {
    task(code: $code) {
      id
      webhooks {
        id
        url
        events
        description
        active
        createdAt
        deliveries(first: 10) {
          totalCount
          nodes {
            id
            event
            status
            attempts
            responseStatus
            error
            createdAt
          }
        }
      }
    }
  }
`);

const CreateWebhook = graphql(`
  mutation CreateWebhook($input: CreateWebhookInput!) {
    createWebhook(input: $input) {
      __typename
      ... on WebhookSecret {
        secret
        webhook {
          id
          url
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

const RotateSecret = graphql(`
  mutation RotateWebhookSecret($input: RotateWebhookSecretInput!) {
    rotateWebhookSecret(input: $input) {
      __typename
      ... on WebhookSecret {
        secret
        webhook {
          id
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const UpdateWebhook = graphql(`
  mutation PauseWebhook($input: UpdateWebhookInput!) {
    updateWebhook(input: $input) {
      __typename
      ... on WebhookUpdated {
        webhook {
          id
          active
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const Redeliver = graphql(`
  mutation RedeliverWebhook($input: RedeliverWebhookInput!) {
    redeliverWebhook(input: $input) {
      __typename
      ... on WebhookRedelivered {
        delivery {
          id
          status
          attempts
          responseStatus
          error
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const DeleteWebhook = graphql(`
  mutation DeleteWebhook($input: DeleteWebhookInput!) {
    deleteWebhook(input: $input) {
      __typename
      ... on WebhookDeleted {
        id
      }
      ... on Error {
        message
      }
    }
  }
`);

const EVENTS: [WebhookEvent, string][] = [
  ["MODEL_FOOLED", "An example fooled the model"],
  ["EXAMPLE_CREATED", "An example was written"],
  ["EXAMPLE_PREDICTED", "A late prediction arrived"],
  ["EXAMPLE_VALIDATED", "An example was validated"],
  ["ROUND_CHANGED", "A round opened, closed or changed"],
];

/** A signing secret, shown once: the person copies it now or rotates it later. */
function Secret({ secret, url }: { secret: string; url: string }) {
  return (
    <div className="notice secret" role="status">
      <p>
        Signing secret of <span className="break">{url}</span>, shown only now; keep it where your receiver can read it:
      </p>
      <code className="break">{secret}</code>
    </div>
  );
}

export default function Webhooks({ task }: { task: ManagedTask }) {
  const [list, refresh] = useQuery({
    query: WebhookList,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const [creating, create] = useMutation(CreateWebhook);
  const outcome = useOutcome();
  const [shown, setShown] = useState<{ secret: string; url: string } | null>(null);
  const reload = () => refresh({ requestPolicy: "network-only" });

  async function add(form: FormData) {
    const events = EVENTS.map(([e]) => e).filter((e) => form.get(`ev-${e}`) === "on");
    if (!events.length) return outcome.fail("Choose at least one event to receive.");
    const url = textOf(form, "url");
    const result = await create({
      input: { taskCode: task.code, url, events, description: textOf(form, "description") },
    });
    const answer = result.data?.createWebhook;
    if (outcome.record(result.error, answer, "WebhookSecret", "Webhook created.", ["url", "description"])) {
      if (answer?.__typename === "WebhookSecret") setShown({ secret: answer.secret, url: answer.webhook.url });
      reload();
    } else setShown(null);
  }

  const hooks = list.data?.task?.webhooks ?? [];
  const fields = outcome.problem?.fields ?? {};
  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhooks</h2>
      <form className="card owner-form" onSubmit={submitted(add)}>
        <h3>New webhook</h3>
        <TextInput
          label="URL"
          id="hook-url"
          name="url"
          type="url"
          required
          placeholder="https://example.org/dynaforge-events"
          error={fields.url}
        />
        <fieldset className="control">
          <legend>Events</legend>
          {EVENTS.map(([value, title], i) => (
            <div className="check" key={value}>
              <input type="checkbox" id={`hook-ev-${value}`} name={`ev-${value}`} defaultChecked={i === 0} />
              <label htmlFor={`hook-ev-${value}`}>{title}</label>
            </div>
          ))}
        </fieldset>
        <TextInput
          label="Note (optional)"
          id="hook-description"
          name="description"
          maxLength={500}
          error={fields.description}
        />
        <button type="submit" disabled={creating.fetching}>
          Create webhook
        </button>
        <Outcome outcome={outcome} />
        {shown && <Secret {...shown} />}
      </form>

      <h3 id="hooks-list-title">Registered webhooks{list.data?.task?.webhooks ? ` (${hooks.length})` : ""}</h3>
      {list.error && <p role="alert">{transportMessage(list.error)}</p>}
      {list.data && hooks.length === 0 && <p className="muted">No webhooks on this task.</p>}
      <ul className="rows" aria-labelledby="hooks-list-title">
        {hooks.map((hook) => (
          <HookRow key={hook.id} hook={hook} onChanged={reload} />
        ))}
      </ul>
    </section>
  );
}

type Hook = NonNullable<NonNullable<import("../../gql/graphql").OwnerWebhooksQuery["task"]>["webhooks"]>[number];

function HookRow({ hook, onChanged }: { hook: Hook; onChanged: () => void }) {
  const [rotating, rotate] = useMutation(RotateSecret);
  const [pausing, pause] = useMutation(UpdateWebhook);
  const [deleting, remove] = useMutation(DeleteWebhook);
  const [redelivering, redeliver] = useMutation(Redeliver);
  const outcome = useOutcome();
  const [secret, setSecret] = useState<string | null>(null);
  const busy = rotating.fetching || pausing.fetching || deleting.fetching;

  async function newSecret() {
    const result = await rotate({ input: { id: hook.id } });
    const answer = result.data?.rotateWebhookSecret;
    if (outcome.record(result.error, answer, "WebhookSecret", "New secret drawn; the old one no longer signs."))
      setSecret(answer?.__typename === "WebhookSecret" ? answer.secret : null);
  }

  async function toggle() {
    const result = await pause({ input: { id: hook.id, active: !hook.active } });
    outcome.record(result.error, result.data?.updateWebhook, "WebhookUpdated", hook.active ? "Paused." : "Resumed.");
  }

  async function sendAgain(deliveryId: string, event: string) {
    const result = await redeliver({ input: { id: deliveryId } });
    outcome.record(result.error, result.data?.redeliverWebhook, "WebhookRedelivered", `The ${event} is queued again.`);
  }

  async function drop() {
    const result = await remove({ input: { id: hook.id } });
    if (outcome.record(result.error, result.data?.deleteWebhook, "WebhookDeleted", "Deleted.")) onChanged();
  }

  return (
    <li className="row">
      <p className="row-text">
        <strong className="break">{hook.url}</strong> {hook.active ? "" : <span className="muted">(paused)</span>}
      </p>
      <p className="small muted">
        {hook.events.map((e) => e.toLowerCase().replace(/_/g, " ")).join(", ")} · since {when(hook.createdAt)}
        {hook.description ? ` · ${hook.description}` : ""}
      </p>
      <p className="actions">
        <button
          type="button"
          className="secondary"
          disabled={busy}
          onClick={newSecret}
          aria-label={`Rotate the secret of ${hook.url}`}
        >
          Rotate secret
        </button>
        <button
          type="button"
          className="secondary"
          disabled={busy}
          onClick={toggle}
          aria-label={`${hook.active ? "Pause" : "Resume"} ${hook.url}`}
        >
          {hook.active ? "Pause" : "Resume"}
        </button>
        <AskTwice
          label={`Delete ${hook.url}`}
          confirm="Yes, delete it and its delivery log"
          busy={busy}
          onConfirm={() => void drop()}
        >
          Delete
        </AskTwice>
      </p>
      <Outcome outcome={outcome} />
      {secret && <Secret secret={secret} url={hook.url} />}
      <details>
        <summary>Deliveries ({hook.deliveries.totalCount})</summary>
        {hook.deliveries.nodes.length === 0 ? (
          <p className="muted small">Nothing sent yet.</p>
        ) : (
          <table className="table">
            <caption className="sr">Latest deliveries to {hook.url}</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Answer</th>
                <th scope="col">When</th>
                <th scope="col">
                  <span className="sr">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {hook.deliveries.nodes.map((d) => (
                <tr key={d.id}>
                  <td>{d.event.toLowerCase().replace(/_/g, " ")}</td>
                  <td>{d.status.toLowerCase()}</td>
                  <td>{d.attempts}</td>
                  <td>{d.responseStatus ?? d.error ?? "–"}</td>
                  <td>{when(d.createdAt)}</td>
                  <td>
                    {(d.status === "FAILED" || d.status === "DELIVERED") && (
                      <button
                        type="button"
                        className="secondary"
                        disabled={redelivering.fetching}
                        onClick={() => sendAgain(d.id, `${d.event.toLowerCase().replace(/_/g, " ")} delivery`)}
                        aria-label={`Send the ${d.event.toLowerCase().replace(/_/g, " ")} delivery of ${when(d.createdAt)} again`}
                      >
                        Send again
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </details>
    </li>
  );
}
