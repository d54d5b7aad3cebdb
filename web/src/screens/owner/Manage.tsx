// The owner pages of a task (its owners and admins): settings, rounds, contexts, machine adversaries (generation
// runs), flagged examples, the tutorial, validators, analytics, data sets, retraining, exports and webhooks, each a
// section under /tasks/:code/manage/.
// Loaded on demand: none of it is in the first load of an annotate page.
import { useQuery } from "urql";
import { Link, useLocation } from "wouter";
import { graphql } from "../../gql";
import type { ManageTaskQuery } from "../../gql/graphql";
import { transportMessage } from "../../lib/errors";
import Adversaries from "./Adversaries";
import Analytics from "./Analytics";
import Contexts from "./Contexts";
import Crowd from "./Crowd";
import Datasets from "./Datasets";
import Exports from "./Exports";
import Flagged from "./Flagged";
import Retraining from "./Retraining";
import Rounds from "./Rounds";
import Settings from "./Settings";
import TutorialItems from "./TutorialItems";
import Validators from "./Validators";
import Webhooks from "./Webhooks";

export const ManageTask = graphql(`
  query ManageTask($code: String!) {
    task(code: $code) {
      id
      code
      name
      viewerIsOwner
      hidden
      active
      instructions
      fooledThreshold
      judgeRubric
      fields {
        name
        role
        type
        required
        description
      }
      settings {
        validationQuorum
        validateNonFooling
        oneExamplePerTag
        dailyExampleCap
        submissionsPerDay
        contextStrategy
        fooledThreshold
        judgeRubric
        nearDuplicateThreshold
        qualificationPassMark
        breakReminderMinutes
      }
      currentRound {
        id
        number
        description
        ensembleRule
        startedAt
        endedAt
        collected
        targetModels {
          name
          backend
          config
          registered {
            ...RegisteredModelParts
          }
        }
      }
      rounds {
        id
        number
        startedAt
        endedAt
        collected
        fooled
        targetModels {
          name
          registered {
            id
            origin
            weights
          }
        }
      }
    }
  }
`);

export type ManagedTask = NonNullable<ManageTaskQuery["task"]>;

const SECTIONS = [
  ["settings", "Settings"],
  ["rounds", "Rounds"],
  ["contexts", "Contexts"],
  ["adversaries", "Machine adversaries"],
  ["flagged", "Flagged"],
  ["tutorial", "Tutorial"],
  ["validators", "Validators"],
  ["crowd", "Crowd"],
  ["analytics", "Analytics"],
  ["datasets", "Data sets"],
  ["retraining", "Retraining"],
  ["exports", "Exports"],
  ["webhooks", "Webhooks"],
] as const;

type Section = (typeof SECTIONS)[number][0];

export default function Manage({ code, section }: { code: string; section?: string }) {
  const [{ data, error, fetching }, refresh] = useQuery({ query: ManageTask, variables: { code } });
  const [location] = useLocation();
  const task = data?.task;
  if (error) return <p role="alert">{transportMessage(error)}</p>;
  if (fetching && !task) return <p className="muted">Loading the task…</p>;
  if (!task?.viewerIsOwner)
    return (
      <section>
        <h1>Manage a task</h1>
        <p>
          Only the owners of the task <code>{code}</code> and admins manage it. <Link href="/">See the tasks</Link>.
        </p>
      </section>
    );
  const current: Section = SECTIONS.some(([key]) => key === section) ? (section as Section) : "rounds";
  const base = `/tasks/${encodeURIComponent(task.code)}/manage`;
  const reload = () => refresh({ requestPolicy: "network-only" });
  return (
    <section className="manage">
      <h1>Manage {task.name}</h1>
      <p className="lead">
        <Link href={`/tasks/${encodeURIComponent(task.code)}`}>Write examples for {task.name}</Link>
        {task.currentRound ? ` · round ${task.currentRound.number}${task.currentRound.endedAt ? " (closed)" : ""}` : ""}
      </p>
      <nav aria-label="Manage the task" className="tabs">
        {SECTIONS.map(([key, title]) => {
          const href = `${base}/${key}`;
          const here = key === current && location.startsWith(base);
          return (
            <Link key={key} href={href} aria-current={here ? "page" : undefined}>
              {title}
            </Link>
          );
        })}
      </nav>
      {current === "settings" && <Settings task={task} />}
      {current === "rounds" && <Rounds task={task} onChanged={reload} />}
      {current === "contexts" && <Contexts task={task} />}
      {current === "adversaries" && <Adversaries task={task} />}
      {current === "flagged" && <Flagged task={task} />}
      {current === "tutorial" && <TutorialItems task={task} />}
      {current === "validators" && <Validators task={task} />}
      {current === "crowd" && <Crowd task={task} />}
      {current === "analytics" && <Analytics task={task} />}
      {current === "datasets" && <Datasets task={task} />}
      {current === "retraining" && <Retraining task={task} onChanged={reload} />}
      {current === "exports" && <Exports task={task} />}
      {current === "webhooks" && <Webhooks task={task} />}
    </section>
  );
}
