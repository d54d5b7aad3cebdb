import { useState } from "react";
import { useMutation } from "urql";
import { Link, useLocation } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf } from "../lib/errors";
import { ProblemBox, submitted, TextInput } from "./Form";

const RegisterMutation = graphql(`
  mutation Register($input: RegisterInput!) {
    register(input: $input) {
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
      ... on InvalidInput {
        fieldErrors {
          field
          message
        }
      }
      ... on RateLimited {
        retryAfterSeconds
      }
    }
  }
`);

const FIELDS = ["username", "email", "password"];

export default function Register() {
  const { signIn } = useAuth();
  const [, navigate] = useLocation();
  const [state, register] = useMutation(RegisterMutation);
  const [problem, setProblem] = useState<Problem | null>(null);

  async function submit(form: FormData) {
    const input = Object.fromEntries(FIELDS.map((f) => [f, String(form.get(f) ?? "")])) as {
      username: string;
      email: string;
      password: string;
    };
    const result = await register({ input });
    const answer = result.data?.register;
    const failed = problemOf(result.error, answer, "AuthPayload", FIELDS);
    if (failed?.message && answer?.__typename === "AlreadyExists") failed.fields.username = failed.message;
    setProblem(failed);
    if (!failed && answer?.__typename === "AuthPayload") {
      signIn({ token: answer.token, username: answer.user.username });
      navigate("/");
    }
  }

  return (
    <section className="narrow">
      <h1>Register</h1>
      <form onSubmit={submitted(submit)} className="card" noValidate>
        <TextInput
          label="Username"
          name="username"
          autoComplete="username"
          required
          minLength={3}
          maxLength={40}
          hint="3 to 40 letters, digits, '_', '.' or '-'; shown on leaderboards."
          error={problem?.fields.username}
        />
        <TextInput
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          required
          error={problem?.fields.email}
        />
        <TextInput
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          hint="At least 8 characters."
          error={problem?.fields.password}
        />
        <ProblemBox problem={problem} />
        <button type="submit" disabled={state.fetching}>
          Create account
        </button>
      </form>
      <p>
        Have an account? <Link href="/signin">Sign in</Link>.
      </p>
    </section>
  );
}
