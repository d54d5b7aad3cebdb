// A crowd study's page for its participants: the link from the platform (Prolific) lands here with the platform's
// URL parameters. They are handed to joinCrowdStudy, which signs the participant into their pseudonymous account of
// the study; the token comes back in the answer (never in a URL) and the parameters leave the address bar at once.
// The page then says what the study asks and pays, shows the work so far, and gives the completion code at the end.
import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf } from "../lib/errors";
import { money } from "../lib/money";
import { ProblemBox } from "./Form";

export const CrowdParticipationParts = graphql(`
  fragment CrowdParticipationParts on CrowdParticipation {
    studyName
    taskCode
    platformTitle
    username
    currency
    payPerVerifiedFooling
    payPerAgreeingValidation
    minimumExamples
    minimumValidations
    remainingExamples
    remainingValidations
    completedAt
    completionCode
    completionUrl
    work {
      examples
      fooled
      verifiedFooling
      pendingExamples
      validations
      agreeingValidations
      earned
    }
  }
`);

const Join = graphql(`
  mutation JoinCrowdStudy($input: JoinCrowdStudyInput!) {
    joinCrowdStudy(input: $input) {
      __typename
      ... on CrowdStudyJoined {
        isNew
        auth {
          token
          user {
            id
            username
          }
        }
        participation {
          ...CrowdParticipationParts
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

const Mine = graphql(`
  query MyCrowdParticipation {
    crowdParticipation {
      ...CrowdParticipationParts
    }
  }
`);

const Complete = graphql(`
  mutation CompleteCrowdStudy {
    completeCrowdStudy {
      __typename
      ... on CrowdStudyCompleted {
        participation {
          ...CrowdParticipationParts
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

interface Shown {
  studyName: string;
  taskCode: string;
  platformTitle: string;
  username: string;
  currency: string;
  payPerVerifiedFooling: number;
  payPerAgreeingValidation: number;
  minimumExamples: number;
  minimumValidations: number;
  remainingExamples: number;
  remainingValidations: number;
  completedAt?: unknown;
  completionCode?: string | null;
  completionUrl?: string | null;
  work: {
    examples: number;
    fooled: number;
    verifiedFooling: number;
    pendingExamples: number;
    validations: number;
    agreeingValidations: number;
    earned: number;
  };
}

/** The link's parameters, read once on arrival (before they leave the address bar). */
function arrivalParameters(): { name: string; value: string }[] {
  return [...new URLSearchParams(window.location.search).entries()].map(([name, value]) => ({ name, value }));
}

export default function Crowd({ platform, study }: { platform: string; study: string }) {
  const { session, signIn } = useAuth();
  const here = `/crowd/${platform}/${study}`;
  const [parameters] = useState(arrivalParameters);
  const [joined, setJoined] = useState<Shown | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [, join] = useMutation(Join);
  const asked = useRef(false);

  useEffect(() => {
    if (!parameters.length || asked.current) return;
    asked.current = true; // once, even when React runs effects twice
    window.history.replaceState(null, "", here);
    join({ input: { platform, study, parameters } }).then((result) => {
      const answer = result.data?.joinCrowdStudy;
      const failed = problemOf(result.error, answer, "CrowdStudyJoined");
      setProblem(failed);
      if (!failed && answer?.__typename === "CrowdStudyJoined") {
        signIn({ token: answer.auth.token, username: answer.auth.user.username, crowd: here });
        setJoined(answer.participation as Shown);
      }
    });
  }, [parameters, join, platform, study, here, signIn]);

  const arriving = parameters.length > 0 && !joined && !problem;
  const [mine, refetch] = useQuery({
    query: Mine,
    pause: arriving || !session,
    requestPolicy: "cache-and-network",
  });
  const shown = (mine.data?.crowdParticipation as Shown | null | undefined) ?? joined;

  if (arriving) return <p className="muted">Signing you in to the study…</p>;
  if (problem)
    return (
      <section className="crowd">
        <h1>This study link did not work</h1>
        <ProblemBox problem={problem} />
        <p>Go back to the study on the platform and open it again from there.</p>
      </section>
    );
  if (!shown)
    return (
      <section className="crowd">
        <h1>Crowd study</h1>
        <p>{mine.fetching ? "Loading…" : "Open this study from the platform that sent you: its link signs you in."}</p>
      </section>
    );
  return <Study shown={shown} onDone={() => refetch({ requestPolicy: "network-only" })} />;
}

function Study({ shown, onDone }: { shown: Shown; onDone: () => void }) {
  const [state, complete] = useMutation(Complete);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [finished, setFinished] = useState<Shown | null>(null);
  const now = finished ?? shown;
  const code = now.completionCode;
  const work = now.work;
  const pay = (amount: number) => money(amount, now.currency);

  async function finish() {
    const result = await complete({});
    const answer = result.data?.completeCrowdStudy;
    const failed = problemOf(result.error, answer, "CrowdStudyCompleted");
    setProblem(failed);
    if (!failed && answer?.__typename === "CrowdStudyCompleted") {
      setFinished(answer.participation as Shown);
      onDone();
    }
  }

  return (
    <section className="crowd" aria-labelledby="crowd-title">
      <h1 id="crowd-title">{now.studyName}</h1>
      <p>
        You take part through {now.platformTitle} as <strong>{now.username}</strong>, an account of this study only: no
        name, no e-mail, no password. Keep this tab open while you work.
      </p>
      <h2>What to do</h2>
      <ul>
        <li>
          Write examples that fool the model
          {now.minimumExamples > 0 ? `: at least ${now.minimumExamples}` : ""}.{" "}
          <Link href={`/tasks/${now.taskCode}`}>Write examples</Link>
        </li>
        {now.minimumValidations > 0 || now.payPerAgreeingValidation > 0 ? (
          <li>
            Check other people's examples
            {now.minimumValidations > 0 ? `: at least ${now.minimumValidations}` : ""}.{" "}
            <Link href={`/validate/${now.taskCode}`}>Validate</Link>
          </li>
        ) : null}
      </ul>
      {now.payPerVerifiedFooling > 0 || now.payPerAgreeingValidation > 0 ? (
        <p>
          Bonus: {pay(now.payPerVerifiedFooling)} for each example that fools the model and that validators accept
          {now.payPerAgreeingValidation > 0
            ? `, ${pay(now.payPerAgreeingValidation)} for each vote that agrees with the final decision`
            : ""}
          . Bonuses are paid once the examples are decided.
        </p>
      ) : null}
      <h2>Your work</h2>
      <dl className="crowd-work">
        <dt>Examples written</dt>
        <dd>
          {work.examples}
          {now.minimumExamples > 0 ? ` of ${now.minimumExamples}` : ""}
        </dd>
        <dt>Fooled the model</dt>
        <dd>{work.fooled}</dd>
        <dt>Accepted by validators</dt>
        <dd>
          {work.verifiedFooling}
          {work.pendingExamples > 0 ? ` (${work.pendingExamples} still waiting)` : ""}
        </dd>
        {now.minimumValidations > 0 || work.validations > 0 ? (
          <>
            <dt>Votes cast</dt>
            <dd>
              {work.validations}
              {now.minimumValidations > 0 ? ` of ${now.minimumValidations}` : ""}
            </dd>
          </>
        ) : null}
        <dt>Bonus so far</dt>
        <dd>{pay(work.earned)}</dd>
      </dl>
      {code ? (
        <div className="crowd-done" role="status">
          <h2>Done: thank you</h2>
          <p>
            Your completion code is <output className="code">{code}</output>
          </p>
          {now.completionUrl ? (
            <p>
              <a href={now.completionUrl} rel="noreferrer">
                Back to {now.platformTitle}
              </a>{" "}
              (it takes the code for you)
            </p>
          ) : (
            <p>Give this code to {now.platformTitle}.</p>
          )}
        </div>
      ) : (
        <div className="crowd-finish">
          <h2>Finish</h2>
          <p>
            {now.remainingExamples > 0 || now.remainingValidations > 0
              ? "When you have done the work above, finish here to get your completion code."
              : "You have done what the study asks; write more if you like, or finish now."}
          </p>
          <button type="button" onClick={finish} disabled={state.fetching}>
            Finish and get my completion code
          </button>
          <ProblemBox problem={problem} />
        </div>
      )}
    </section>
  );
}
