// Admin (/admin): running the platform's accounts. Admins find an account (by name or email, admins or disabled
// ones only), make or unmake an admin, disable or enable an account (its tokens stop at once), and read and revoke
// anyone's API tokens (never a secret: they are stored hashed). Everyone else is told the page is for admins.
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import type { AdminUsersQuery, TokenOrigin } from "../gql/graphql";
import { useAuth } from "../lib/auth";
import { transportMessage } from "../lib/errors";
import { AskTwice } from "./AskTwice";
import { submitted, TextInput } from "./Form";
import { RevokeToken } from "./fragments";
import { Checkbox, Outcome, useOutcome, when } from "./owner/parts";
import { ScrollBox } from "./ScrollBox";
import "./boards.css";

/** How many accounts a page of the list shows. */
export const USERS_PAGE = 25;
/** How many of an account's tokens its row lists, newest first (the rest are counted). */
const TOKENS_SHOWN = 20;

const AdminUsers = graphql(`
  query AdminUsers($search: String, $admins: Boolean!, $disabled: Boolean!, $first: Int!, $after: String) {
    me {
      id
      isAdmin
    }
    users(search: $search, adminsOnly: $admins, disabledOnly: $disabled, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        username
        email
        isAdmin
        active
        createdAt
      }
    }
  }
`);

const UserTokens = graphql(`
  query AdminUserTokens($id: ID!, $first: Int!) {
    node(id: $id) {
      id
      ... on User {
        apiTokens(first: $first) {
          totalCount
          nodes {
            id
            name
            origin
            prefix
            createdAt
            lastUsedAt
            revoked
          }
        }
      }
    }
  }
`);

const SetAdmin = graphql(`
  mutation AdminSetUserAdmin($input: SetUserAdminInput!) {
    setUserAdmin(input: $input) {
      __typename
      ... on UserUpdated {
        user {
          id
          isAdmin
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const SetActive = graphql(`
  mutation AdminSetUserActive($input: SetUserActiveInput!) {
    setUserActive(input: $input) {
      __typename
      ... on UserUpdated {
        user {
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

type Account = NonNullable<AdminUsersQuery["users"]>["nodes"][number];

const ORIGINS: Record<TokenOrigin, string> = {
  REGISTRATION: "registration",
  LOGIN: "sign-in",
  API: "their own",
  OPERATOR: "an admin's",
  CROWD: "a crowd study's link",
};

export default function Admin() {
  const { session } = useAuth();
  const [filters, setFilters] = useState({ search: "", admins: false, disabled: false });
  const [after, setAfter] = useState<string[]>([]);
  const outcome = useOutcome();
  const cursor = after.length ? after[after.length - 1] : null;
  const [{ data, error, fetching }, refetch] = useQuery({
    query: AdminUsers,
    variables: {
      search: filters.search || null,
      admins: filters.admins,
      disabled: filters.disabled,
      first: USERS_PAGE,
      after: cursor,
    },
    pause: !session,
    requestPolicy: "cache-and-network",
  });
  if (!session)
    return (
      <section>
        <h1>Admin</h1>
        <p className="notice">
          <Link href="/signin">Sign in</Link> as an admin to run the platform's accounts.
        </p>
      </section>
    );
  if (data?.me && !data.me.isAdmin)
    return (
      <section>
        <h1>Admin</h1>
        <p className="notice">This page is for the platform's admins.</p>
      </section>
    );
  const users = data?.users;
  const reload = () => refetch({ requestPolicy: "network-only" });
  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title">Admin</h1>
      <p className="lead">
        Find an account, make or unmake an admin, disable an account (its tokens stop signing in at once) or enable it
        again, and read or revoke its API tokens. Nobody can unmake or disable themself.
      </p>
      <form
        className="inline-form"
        aria-label="Find accounts"
        onSubmit={submitted((form) => {
          setAfter([]);
          setFilters({
            search: String(form.get("search") ?? "").trim(),
            admins: form.get("admins") === "on",
            disabled: form.get("disabled") === "on",
          });
        })}
      >
        <TextInput label="Name or email contains" id="admin-search" name="search" defaultValue={filters.search} />
        <Checkbox label="Admins only" id="admin-admins" name="admins" defaultChecked={filters.admins} />
        <Checkbox label="Disabled only" id="admin-disabled" name="disabled" defaultChecked={filters.disabled} />
        <button type="submit">Find</button>
      </form>
      {error && (
        <p role="alert" className="problem">
          {transportMessage(error)}
        </p>
      )}
      {fetching && !users && <p className="muted">Loading…</p>}
      {users && (
        <>
          <p className="muted" data-accounts-count>
            {users.totalCount === 1 ? "1 account" : `${users.totalCount} accounts`}
            {filters.search || filters.admins || filters.disabled ? " match" : ""}.
          </p>
          <Outcome outcome={outcome} />
          <ScrollBox label="Accounts, scrollable">
            <table className="board" data-accounts>
              <caption className="sr">Accounts, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Account</th>
                  <th scope="col">Email</th>
                  <th scope="col">Since</th>
                  <th scope="col">Role</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span className="sr">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {users.nodes.map((u) => (
                  <AccountRow key={u.id} account={u} self={u.id === data?.me?.id} outcome={outcome} onChange={reload} />
                ))}
              </tbody>
            </table>
          </ScrollBox>
          <p className="actions">
            <button type="button" disabled={after.length === 0} onClick={() => setAfter(after.slice(0, -1))}>
              Newer accounts
            </button>
            <button
              type="button"
              disabled={!users.pageInfo.hasNextPage}
              onClick={() => users.pageInfo.endCursor && setAfter([...after, users.pageInfo.endCursor])}
            >
              Older accounts
            </button>
          </p>
        </>
      )}
    </section>
  );
}

function AccountRow({
  account,
  self,
  outcome,
  onChange,
}: {
  account: Account;
  self: boolean;
  outcome: ReturnType<typeof useOutcome>;
  onChange: () => void;
}) {
  const [settingAdmin, setAdmin] = useMutation(SetAdmin);
  const [settingActive, setActive] = useMutation(SetActive);
  const [tokensOpen, setTokensOpen] = useState(false);
  const name = account.username;

  async function toggleAdmin() {
    const on = !account.isAdmin;
    const result = await setAdmin({ input: { id: account.id, isAdmin: on } });
    const said = on ? `${name} is an admin now.` : `${name} is no longer an admin.`;
    if (outcome.record(result.error, result.data?.setUserAdmin, "UserUpdated", said)) onChange();
  }

  async function toggleActive() {
    const on = !account.active;
    const result = await setActive({ input: { id: account.id, active: on } });
    const said = on ? `${name} can sign in again.` : `${name} is disabled: their tokens no longer sign in.`;
    if (outcome.record(result.error, result.data?.setUserActive, "UserUpdated", said)) onChange();
  }

  return (
    <>
      <tr data-account={name}>
        <th scope="row">
          {name}
          {self && <span className="muted"> (you)</span>}
        </th>
        <td>{account.email ?? "–"}</td>
        <td>{when(account.createdAt)}</td>
        <td>{account.isAdmin ? "admin" : "user"}</td>
        <td>{account.active === false ? "disabled" : "active"}</td>
        <td>
          <div className="actions">
            <button
              type="button"
              disabled={self || settingAdmin.fetching}
              aria-label={`${account.isAdmin ? "Remove admin rights from" : "Make admin:"} ${name}`}
              onClick={toggleAdmin}
            >
              {account.isAdmin ? "Remove admin" : "Make admin"}
            </button>
            {account.active === false ? (
              <button
                type="button"
                disabled={self || settingActive.fetching}
                aria-label={`Enable ${name}`}
                onClick={toggleActive}
              >
                Enable
              </button>
            ) : (
              <AskTwice
                label={`Disable ${name}`}
                question="Their tokens stop signing in at once; you can enable them again."
                confirm={`Yes, disable ${name}`}
                busy={self || settingActive.fetching}
                onConfirm={() => void toggleActive()}
                className=""
              >
                Disable
              </AskTwice>
            )}
            <button
              type="button"
              aria-expanded={tokensOpen}
              aria-controls={`tokens-${account.id}`}
              aria-label={`${tokensOpen ? "Hide" : "Show"} the tokens of ${name}`}
              onClick={() => setTokensOpen(!tokensOpen)}
            >
              Tokens
            </button>
          </div>
        </td>
      </tr>
      {tokensOpen && (
        <tr id={`tokens-${account.id}`}>
          <td colSpan={6}>
            <Tokens userId={account.id} name={name} />
          </td>
        </tr>
      )}
    </>
  );
}

function Tokens({ userId, name }: { userId: string; name: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({
    query: UserTokens,
    variables: { id: userId, first: TOKENS_SHOWN },
    requestPolicy: "network-only",
  });
  const [revoking, revoke] = useMutation(RevokeToken);
  const outcome = useOutcome();
  if (error)
    return (
      <p role="alert" className="problem">
        {transportMessage(error)}
      </p>
    );
  if (fetching && !data) return <p className="muted">Loading…</p>;
  const tokens = data?.node?.__typename === "User" ? data.node.apiTokens : null;
  if (!tokens || tokens.nodes.length === 0) return <p className="muted small">{name} has no API tokens.</p>;

  async function revokeOne(id: string, label: string) {
    const result = await revoke({ input: { id } });
    if (outcome.record(result.error, result.data?.revokeApiToken, "ApiTokenRevoked", `Revoked “${label}”.`))
      refetch({ requestPolicy: "network-only" });
  }

  return (
    <>
      <table className="table" data-user-tokens={name}>
        <caption>
          Tokens of {name}
          {tokens.totalCount > tokens.nodes.length ? `: the newest ${tokens.nodes.length} of ${tokens.totalCount}` : ""}
        </caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Issued by</th>
            <th scope="col">Starts with</th>
            <th scope="col">Issued</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="sr">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.nodes.map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>{ORIGINS[t.origin]}</td>
              <td>
                <code>{t.prefix}…</code>
              </td>
              <td>{when(t.createdAt)}</td>
              <td>{when(t.lastUsedAt)}</td>
              <td>{t.revoked ? "revoked" : "live"}</td>
              <td>
                {!t.revoked && (
                  <button
                    type="button"
                    disabled={revoking.fetching}
                    aria-label={`Revoke the token ${t.name} of ${name}`}
                    onClick={() => revokeOne(t.id, t.name)}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Outcome outcome={outcome} />
    </>
  );
}
