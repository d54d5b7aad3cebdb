import { useState } from "react";
import { useClient, useMutation } from "urql";
import { Link, useLocation } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf } from "../lib/errors";
import { ProblemBox, submitted, TextInput } from "./Form";

const Login = graphql(`
  mutation Login($input: LoginInput!) {
    login(input: $input) {
      __typename
      ... on AuthPayload {
        token
        user {
          id
          username
        }
      }
      ... on Error {
        message
      }
      ... on RateLimited {
        retryAfterSeconds
      }
    }
  }
`);

const WhoAmI = graphql(`
  query WhoAmI {
    me {
      id
      username
    }
  }
`);

export default function SignIn() {
  const { signIn } = useAuth();
  const [, navigate] = useLocation();
  const [state, login] = useMutation(Login);
  const client = useClient();
  const [problem, setProblem] = useState<Problem | null>(null);
  const [tokenProblem, setTokenProblem] = useState<Problem | null>(null);

  async function withPassword(form: FormData) {
    const result = await login({
      input: { username: String(form.get("username") ?? ""), password: String(form.get("password") ?? "") },
    });
    const answer = result.data?.login;
    const failed = problemOf(result.error, answer, "AuthPayload");
    setProblem(failed);
    if (!failed && answer?.__typename === "AuthPayload") {
      signIn({ token: answer.token, username: answer.user.username });
      navigate("/");
    }
  }

  async function withToken(form: FormData) {
    const token = String(form.get("token") ?? "").trim();
    if (!token) return setTokenProblem({ message: "Paste an API token (it starts with dfk_).", fields: {} });
    // Asked with this token only, without the cache: the answer says whose token it is, or that it is not valid.
    const result = await client
      .query(
        WhoAmI,
        {},
        { requestPolicy: "network-only", fetchOptions: { headers: { authorization: `Bearer ${token}` } } },
      )
      .toPromise();
    const me = result.data?.me;
    if (result.error || !me) {
      setTokenProblem({
        message: result.error?.networkError
          ? "The server could not be reached; try again."
          : "This token is not valid (revoked, expired or mistyped).",
        fields: {},
      });
      return;
    }
    signIn({ token, username: me.username });
    navigate("/");
  }

  return (
    <section className="narrow">
      <h1>Sign in</h1>
      <form onSubmit={submitted(withPassword)} className="card" noValidate>
        <TextInput label="Username" name="username" autoComplete="username" required />
        <TextInput label="Password" name="password" type="password" autoComplete="current-password" required />
        <ProblemBox problem={problem} />
        <button type="submit" disabled={state.fetching}>
          Sign in
        </button>
      </form>
      <p>
        No account yet? <Link href="/register">Register</Link>.
      </p>
      <form onSubmit={submitted(withToken)} className="card" noValidate>
        <h2>With an API token</h2>
        <TextInput
          label="API token"
          name="token"
          type="password"
          autoComplete="off"
          hint="A token from `dynaforge tokens create` or the demo's start-up message."
        />
        <ProblemBox problem={tokenProblem} />
        <button type="submit" className="secondary">
          Use token
        </button>
      </form>
    </section>
  );
}
