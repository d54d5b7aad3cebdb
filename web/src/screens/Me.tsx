// Me (/me): the signed-in user's account, their statistics per task and round, and their API tokens: issue one
// (its secret shown once), revoke any (revoking the one in use signs this tab out).
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { Link, useLocation } from "wouter";
import { graphql } from "../gql";
import type { MePageQuery, TokenOrigin } from "../gql/graphql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf, transportMessage } from "../lib/errors";
import { percent } from "../lib/format";
import { AskTwice } from "./AskTwice";
import { ProblemBox, submitted, TextInput } from "./Form";
import { RevokeToken } from "./fragments";
import { ScrollBox } from "./ScrollBox";
import "./boards.css";

// The counters a row of the statistics table shows, for a round and for the total.
export const MyCounters = graphql(`
  fragment MyCounters on Stats {
    collected
    fooled
    verifiedFooled
    accepted
    rejected
    retracted
    vmer
  }
`);

const MePage = graphql(`
  query MePage($tokens: Int!, $examples: Int!) {
    me {
      id
      username
      email
      isAdmin
      createdAt
      apiTokens(first: $tokens) {
        totalCount
        nodes {
          id
          name
          origin
          prefix
          createdAt
          lastUsedAt
          expiresAt
          revoked
          current
        }
      }
    }
    tasks {
      id
      code
      name
      settings {
        validationQuorum
      }
      examples(mine: true, first: $examples) {
        totalCount
        nodes {
          id
          fields
          status
          fooled
          createdAt
          round {
            number
          }
          votes {
            correct
            incorrect
            flagged
          }
        }
      }
      viewerStats {
        taskCode
        remainingToday
        rounds {
          roundNumber
          stats {
            ...MyCounters
          }
        }
        total {
          ...MyCounters
        }
      }
    }
  }
`);

/** How many of one's API tokens the page lists, newest first (the rest are counted). */
const TOKENS_LISTED = 100;
/** How many of one's latest examples the page lists per task (the rest are counted). */
const EXAMPLES_LISTED = 10;

const RetractMine = graphql(`
  mutation RetractMine($input: RetractExampleInput!) {
    retractExample(input: $input) {
      __typename
      ... on ExampleRetracted {
        example {
          id
          status
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

type MyExamples = MePageQuery["tasks"][number]["examples"];
type MyExample = NonNullable<MyExamples>["nodes"][number];

/** Where an example of one's own stands, in words. */
const STANDING: Record<string, string> = {
  PENDING_PREDICTION: "waiting for the model",
  PENDING_VERDICT: "waiting for its verdict",
  CREATED: "waiting for votes",
  FLAGGED: "flagged: an owner decides",
  ACCEPTED: "accepted",
  REJECTED: "rejected",
  RETRACTED: "retracted",
};
/** The statuses in which its author may still withdraw an example. */
const RETRACTABLE = new Set(["PENDING_PREDICTION", "PENDING_VERDICT", "CREATED", "FLAGGED"]);

/** The example in a line: its first text field, shortened. */
function summary(fields: unknown): string {
  const texts = Object.values((fields ?? {}) as Record<string, unknown>).filter(
    (v): v is string => typeof v === "string" && v.trim() !== "",
  );
  const text = texts[0] ?? JSON.stringify(fields);
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

type MyTaskStats = NonNullable<MePageQuery["tasks"][number]["viewerStats"]>;

const CreateToken = graphql(`
  mutation CreateToken($input: CreateApiTokenInput!) {
    createApiToken(input: $input) {
      __typename
      ... on ApiTokenCreated {
        token
        apiToken {
          id
          name
          origin
          prefix
          createdAt
          lastUsedAt
          expiresAt
          revoked
          current
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

const when = (iso: string | null | undefined) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : "–";

export default function Me() {
  const { session } = useAuth();
  if (!session)
    return (
      <section>
        <h1>Me</h1>
        <p className="notice">
          <Link href="/signin">Sign in</Link> or <Link href="/register">register</Link> to see your statistics and
          tokens.
        </p>
      </section>
    );
  return <MeScreen />;
}

function MeScreen() {
  const [{ data, error, fetching }, refetch] = useQuery({
    query: MePage,
    variables: { tokens: TOKENS_LISTED, examples: EXAMPLES_LISTED },
    requestPolicy: "cache-and-network",
  });
  const me = data?.me;
  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (!me) return fetching ? <p className="muted">Loading…</p> : <p role="alert">You are not signed in any more.</p>;
  return (
    <section>
      <h1>Me</h1>
      <p className="lead">
        Signed in as <strong>{me.username}</strong>
        {me.email && <> ({me.email})</>}
        {me.isAdmin && ", an admin"}, here since {when(me.createdAt)}.
      </p>
      {me.isAdmin && (
        <p>
          <Link href="/admin">Run the platform's accounts</Link>: admins, disabled accounts and anyone's tokens.
        </p>
      )}
      <section className="board-section" aria-labelledby="stats-heading">
        <h2 id="stats-heading">My statistics</h2>
        {data.tasks.map((task) => (
          <TaskStats key={task.id} code={task.code} name={task.name} stats={task.viewerStats} />
        ))}
      </section>
      <section className="board-section" aria-labelledby="examples-heading">
        <h2 id="examples-heading">My examples</h2>
        {data.tasks.map((task) => (
          <TaskExamples
            key={task.id}
            code={task.code}
            name={task.name}
            quorum={task.settings.validationQuorum}
            examples={task.examples}
            onChange={() => refetch({ requestPolicy: "network-only" })}
          />
        ))}
      </section>
      <Tokens
        tokens={me.apiTokens.nodes}
        total={me.apiTokens.totalCount}
        onChange={() => refetch({ requestPolicy: "network-only" })}
      />
    </section>
  );
}

function TaskExamples({
  code,
  name,
  quorum,
  examples,
  onChange,
}: {
  code: string;
  name: string;
  quorum: number;
  examples: MyExamples;
  onChange: () => void;
}) {
  const headingId = `examples-${code}`;
  const [retracting, retract] = useMutation(RetractMine);
  const [problem, setProblem] = useState<Problem | null>(null);
  if (!examples || examples.totalCount === 0) return null;
  async function withdraw(example: MyExample) {
    const result = await retract({ input: { id: example.id } });
    const failed = problemOf(result.error, result.data?.retractExample, "ExampleRetracted");
    setProblem(failed);
    if (!failed) onChange();
  }
  return (
    <section className="task-stats" aria-labelledby={headingId}>
      <h3 id={headingId}>{name}</h3>
      <p className="muted small">
        {examples.totalCount > examples.nodes.length
          ? `Your latest ${examples.nodes.length} of ${examples.totalCount}.`
          : `All ${examples.totalCount} of yours.`}{" "}
        {quorum} votes of one kind decide an example.
      </p>
      <ul className="my-examples">
        {examples.nodes.map((example) => {
          const votes = example.votes.correct + example.votes.incorrect + example.votes.flagged;
          const open = example.status === "CREATED" || example.status === "PENDING_VERDICT";
          return (
            <li key={example.id} data-example={example.id}>
              <div className="my-example-text">
                <span>{summary(example.fields)}</span>
                <span className="small muted">
                  Round {example.round.number}
                  {example.fooled != null && (example.fooled ? " · fooled the model" : " · did not fool the model")} ·{" "}
                  {STANDING[example.status] ?? example.status.toLowerCase()}
                  {open && `: ${votes} of ${quorum} votes`}
                  {!open && votes > 0 && ` · ${example.votes.correct} correct, ${example.votes.incorrect} incorrect`}
                </span>
              </div>
              {RETRACTABLE.has(example.status) && (
                <AskTwice
                  label={`Retract “${summary(example.fields)}”`}
                  question="It stops counting; this is final."
                  confirm="Yes, retract it"
                  busy={retracting.fetching}
                  onConfirm={() => void withdraw(example)}
                  className="secondary small"
                >
                  Retract
                </AskTwice>
              )}
            </li>
          );
        })}
      </ul>
      <ProblemBox problem={problem} />
    </section>
  );
}

function TaskStats({ code, name, stats }: { code: string; name: string; stats: MyTaskStats | null | undefined }) {
  const headingId = `stats-${code}`;
  return (
    <section className="task-stats" aria-labelledby={headingId}>
      <h3 id={headingId}>{name}</h3>
      {!stats ? (
        <p role="alert">Your statistics in this task could not be read.</p>
      ) : stats.rounds.length === 0 ? (
        <p className="muted">
          You have not written an example here yet. <Link href={`/tasks/${encodeURIComponent(code)}`}>Start</Link>.
        </p>
      ) : (
        <>
          <ScrollBox label={`My statistics in ${name}, scrollable`}>
            <table className="board">
              <caption className="sr">My examples in {name} per round</caption>
              <thead>
                <tr>
                  <th scope="col">Round</th>
                  <th scope="col" className="num">
                    Written
                  </th>
                  <th scope="col" className="num">
                    Fooled
                  </th>
                  <th scope="col" className="num">
                    Verified
                  </th>
                  <th scope="col" className="num">
                    Accepted
                  </th>
                  <th scope="col" className="num">
                    Rejected
                  </th>
                  <th scope="col" className="num">
                    Retracted
                  </th>
                  <th scope="col" className="num">
                    vMER
                  </th>
                </tr>
              </thead>
              <tbody>
                {[
                  ...stats.rounds.map((r) => [`Round ${r.roundNumber}`, r.stats] as const),
                  ["Total", stats.total] as const,
                ].map(([label, s]) => (
                  <tr key={label} className={label === "Total" ? "total" : undefined}>
                    <th scope="row">{label}</th>
                    <td className="num">{s.collected}</td>
                    <td className="num">{s.fooled}</td>
                    <td className="num">{s.verifiedFooled}</td>
                    <td className="num">{s.accepted}</td>
                    <td className="num">{s.rejected}</td>
                    <td className="num">{s.retracted}</td>
                    <td className="num">{percent(s.vmer)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollBox>
          {stats.remainingToday != null && (
            <p className="muted small">You may write {stats.remainingToday} more today.</p>
          )}
        </>
      )}
    </section>
  );
}

interface Token {
  id: string;
  name: string;
  origin: TokenOrigin;
  prefix: string;
  createdAt: string;
  lastUsedAt?: string | null;
  expiresAt?: string | null;
  revoked: boolean;
  current: boolean;
}

const ORIGIN_WORDS: Record<TokenOrigin, string> = {
  REGISTRATION: "issued when you registered",
  LOGIN: "issued at a sign-in",
  API: "made by you",
  OPERATOR: "made for you by an admin",
  CROWD: "issued when you opened the study's link",
};

function Tokens({ tokens, total, onChange }: { tokens: readonly Token[]; total: number; onChange: () => void }) {
  const { signOut } = useAuth();
  const [, navigate] = useLocation();
  const [creating, create] = useMutation(CreateToken);
  const [revoking, revoke] = useMutation(RevokeToken);
  const [createProblem, setCreateProblem] = useState<Problem | null>(null);
  const [revokeProblem, setRevokeProblem] = useState<Problem | null>(null);
  const [secret, setSecret] = useState<{ name: string; token: string } | null>(null);
  const [done, setDone] = useState("");
  const live = tokens.filter((t) => !t.revoked);

  async function revokeOne(token: Token) {
    setDone("");
    const result = await revoke({ input: { id: token.id } });
    const failed = problemOf(result.error, result.data?.revokeApiToken, "ApiTokenRevoked");
    setRevokeProblem(failed);
    if (failed) return;
    if (token.current) {
      signOut();
      navigate("/signin");
      return;
    }
    setDone(`Revoked the token “${token.name}”.`);
    onChange();
  }

  return (
    <section className="board-section" aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">My API tokens</h2>
      <p className="lead">
        Tokens sign scripts and other browsers in as you. Revoke one you no longer use; revoking the one this page uses
        signs you out here.
        {total > tokens.length && ` The newest ${tokens.length} of your ${total} tokens are listed.`}
      </p>
      <ScrollBox label="My API tokens, scrollable">
        <table className="board" data-tokens>
          <caption className="sr">My API tokens, {live.length} live</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Starts with</th>
              <th scope="col">Issued</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="sr">Action</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <tr key={t.id} data-token-prefix={t.prefix}>
                <th scope="row">
                  {t.name}
                  <span className="muted small block">{ORIGIN_WORDS[t.origin]}</span>
                </th>
                <td>
                  <code>{t.prefix}…</code>
                </td>
                <td>{when(t.createdAt)}</td>
                <td>{when(t.lastUsedAt)}</td>
                <td>{t.expiresAt ? when(t.expiresAt) : "never"}</td>
                <td>{t.revoked ? "revoked" : t.current ? "in use here" : "live"}</td>
                <td>
                  {!t.revoked && (
                    <button
                      type="button"
                      className="secondary"
                      disabled={revoking.fetching}
                      onClick={() => revokeOne(t)}
                    >
                      Revoke<span className="sr"> token {t.name}</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      <ProblemBox problem={revokeProblem} />
      <div role="status">{done}</div>
      <form
        className="panel token-form"
        aria-label="New API token"
        onSubmit={submitted(async (form) => {
          setSecret(null);
          const name = String(form.get("name") ?? "").trim();
          const result = await create({ input: { name } });
          const answer = result.data?.createApiToken;
          const failed = problemOf(result.error, answer, "ApiTokenCreated", ["name"]);
          setCreateProblem(failed);
          if (!failed && answer?.__typename === "ApiTokenCreated") {
            setSecret({ name: answer.apiToken.name, token: answer.token });
            onChange();
          }
        })}
      >
        <h3>New token</h3>
        <TextInput
          label="Token name"
          name="name"
          required
          maxLength={100}
          hint="What will use it, e.g. a script or a laptop."
          error={createProblem?.fields.name}
        />
        <button type="submit" disabled={creating.fetching}>
          Create token
        </button>
        <ProblemBox problem={createProblem} />
        <div role="status">
          {secret && (
            <div className="secret">
              <p>
                The token “{secret.name}”; copy it now, it is never shown again. Send it as{" "}
                <code>Authorization: Bearer …</code>.
              </p>
              <code className="token-secret" data-secret>
                {secret.token}
              </code>
            </div>
          )}
        </div>
      </form>
    </section>
  );
}
