// The task's crowd studies as its owners see them: create one for a platform (Prolific), copy the link to paste
// there, close it to new participants, and review each participant's work, time and pay before approving it on the
// platform; then pay the bonuses through the platform's API or download its bonus file.
import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { CrowdStudiesQuery } from "../../gql/graphql";
import { saveBlob } from "../../lib/download";
import { transportMessage } from "../../lib/errors";
import { bonusRows, money } from "../../lib/money";
import { seconds } from "../../lib/validators";
import { submitted, TextInput } from "../Form";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { AskTwice, Outcome, Select, shortWhen, textOf, useOutcome } from "./parts";

const CrowdStudies = graphql(`
  query CrowdStudies($code: String!) {
    crowdPlatforms {
      name
      title
      pays
    }
    task(code: $code) {
      id
      crowdStudies {
        id
        platform
        externalId
        name
        linkPath
        completionCode
        currency
        payPerVerifiedFooling
        payPerAgreeingValidation
        minimumExamples
        minimumValidations
        isOpen
        earned
        owed
        bonusFile
        participants {
          username
          externalId
          joinedAt
          completedAt
          work {
            examples
            fooled
            verifiedFooling
            pendingExamples
            validations
            agreeingValidations
            timeTakenMs
            earned
            paid
            uncertain
            owed
          }
        }
      }
    }
  }
`);

const CreateStudy = graphql(`
  mutation CreateCrowdStudy($input: CreateCrowdStudyInput!) {
    createCrowdStudy(input: $input) {
      __typename
      ... on CrowdStudyCreated {
        study {
          id
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

const SetOpen = graphql(`
  mutation SetCrowdStudyOpen($input: SetCrowdStudyOpenInput!) {
    setCrowdStudyOpen(input: $input) {
      __typename
      ... on CrowdStudyChanged {
        study {
          id
          isOpen
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const Pay = graphql(`
  mutation PayCrowdBonuses($input: PayCrowdBonusesInput!) {
    payCrowdBonuses(input: $input) {
      __typename
      ... on CrowdBonusesPaid {
        reference
        participants
        amount
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

const Record = graphql(`
  mutation RecordCrowdBonuses($input: RecordCrowdBonusesInput!) {
    recordCrowdBonuses(input: $input) {
      __typename
      ... on CrowdBonusesRecorded {
        participants
        amount
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

const FIELDS = [
  "platform",
  "externalId",
  "name",
  "completionCode",
  "currency",
  "payPerVerifiedFooling",
  "payPerAgreeingValidation",
  "minimumExamples",
  "minimumValidations",
] as const;

/** "0.50" (major units, as people type them) -> 50 minor units; NaN for anything else. */
function minor(text: string): number {
  return /^\d+(\.\d{1,2})?$/.test(text.trim()) ? Math.round(Number(text) * 100) : Number.NaN;
}

export default function Crowd({ task }: { task: ManagedTask }) {
  const [{ data, error, fetching }, refresh] = useQuery({
    query: CrowdStudies,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const [creating, create] = useMutation(CreateStudy);
  const created = useOutcome();
  const platforms = data?.crowdPlatforms ?? [];
  const studies = data?.task?.crowdStudies ?? [];

  async function add(form: FormData) {
    const input = {
      taskCode: task.code,
      platform: textOf(form, "platform"),
      externalId: textOf(form, "externalId"),
      name: textOf(form, "name"),
      completionCode: textOf(form, "completionCode"),
      currency: textOf(form, "currency").toUpperCase(),
      payPerVerifiedFooling: minor(textOf(form, "payPerVerifiedFooling") || "0"),
      payPerAgreeingValidation: minor(textOf(form, "payPerAgreeingValidation") || "0"),
      minimumExamples: Number(textOf(form, "minimumExamples") || "0"),
      minimumValidations: Number(textOf(form, "minimumValidations") || "0"),
    };
    if (Number.isNaN(input.payPerVerifiedFooling) || Number.isNaN(input.payPerAgreeingValidation)) {
      created.fail("Type pay as an amount such as 0.50.");
      return;
    }
    const result = await create({ input });
    if (
      created.record(
        result.error,
        result.data?.createCrowdStudy,
        "CrowdStudyCreated",
        `Study ${input.name} is open: paste its link into ${input.platform}.`,
        FIELDS,
      )
    )
      refresh({ requestPolicy: "network-only" });
  }

  return (
    <section aria-labelledby="crowd-title">
      <h2 id="crowd-title">Crowd studies</h2>
      <p className="lead">
        Recruit paid participants on a crowd platform. Each participant who follows the study&rsquo;s link works in this
        task under an account of their own for the study, and gets the completion code once they have done the minimum.
        Bonuses are per example that fools the model and is accepted, and per vote that agrees with the decision.
      </p>
      {error && <p role="alert">{transportMessage(error)}</p>}
      {fetching && !data && <p className="muted">Loading…</p>}
      {studies.map((study) => (
        <Study key={study.id} study={study} onChange={() => refresh({ requestPolicy: "network-only" })} />
      ))}
      {data && studies.length === 0 && <p>No studies yet.</p>}
      <form className="card" onSubmit={submitted(add)}>
        <h3>New study</h3>
        <Select label="Platform" id="crowd-platform" name="platform">
          {platforms.map((p) => (
            <option key={p.name} value={p.name}>
              {p.title}
            </option>
          ))}
        </Select>
        <TextInput
          label="The platform's study id"
          name="externalId"
          required
          error={created.problem?.fields.externalId}
          hint="On Prolific: the id in the study's address."
        />
        <TextInput label="Name shown to participants" name="name" required error={created.problem?.fields.name} />
        <TextInput
          label="Completion code"
          name="completionCode"
          required
          error={created.problem?.fields.completionCode}
          hint="The code the platform expects when a participant finishes."
        />
        <div className="inline-form">
          <TextInput label="Currency" name="currency" defaultValue="GBP" maxLength={3} />
          <TextInput
            label="Per accepted fooling example"
            name="payPerVerifiedFooling"
            inputMode="decimal"
            placeholder="0.50"
            error={created.problem?.fields.payPerVerifiedFooling}
          />
          <TextInput
            label="Per agreeing vote"
            name="payPerAgreeingValidation"
            inputMode="decimal"
            placeholder="0.05"
            error={created.problem?.fields.payPerAgreeingValidation}
          />
        </div>
        <div className="inline-form">
          <TextInput label="Minimum examples" name="minimumExamples" type="number" min={0} defaultValue="0" />
          <TextInput label="Minimum votes" name="minimumValidations" type="number" min={0} defaultValue="0" />
        </div>
        <button type="submit" disabled={creating.fetching || platforms.length === 0}>
          Create the study
        </button>
        <Outcome outcome={created} />
      </form>
    </section>
  );
}

type StudyShown = NonNullable<NonNullable<CrowdStudiesQuery["task"]>["crowdStudies"]>[number];

function Study({ study, onChange }: { study: StudyShown; onChange: () => void }) {
  const [opening, setOpen] = useMutation(SetOpen);
  const [paying, pay] = useMutation(Pay);
  const [recording, record] = useMutation(Record);
  const [downloaded, setDownloaded] = useState<string | null>(null);
  const outcome = useOutcome();
  const [copied, setCopied] = useState(false);
  const link = study.linkPath ? `${window.location.origin}${study.linkPath}` : null;
  const cash = (amount: number) => money(amount, study.currency);

  async function toggle() {
    const result = await setOpen({ input: { studyId: study.id, isOpen: !study.isOpen } });
    if (
      outcome.record(
        result.error,
        result.data?.setCrowdStudyOpen,
        "CrowdStudyChanged",
        study.isOpen ? "The study takes no new participants." : "The study takes new participants again.",
      )
    )
      onChange();
  }

  async function payAll() {
    const result = await pay({ input: { studyId: study.id } });
    const answer = result.data?.payCrowdBonuses;
    const words =
      answer?.__typename === "CrowdBonusesPaid"
        ? `Paid ${cash(answer.amount)} to ${answer.participants} participant(s) (payment ${answer.reference}).`
        : "";
    outcome.record(result.error, answer, "CrowdBonusesPaid", words);
    onChange(); // an uncertain payout is recorded too
  }

  async function recordPaid(form: FormData) {
    if (!downloaded) return;
    const rows = bonusRows(downloaded);
    const result = await record({ input: { studyId: study.id, reference: textOf(form, "reference"), bonuses: rows } });
    const answer = result.data?.recordCrowdBonuses;
    const words =
      answer?.__typename === "CrowdBonusesRecorded"
        ? `Recorded ${cash(answer.amount)} paid to ${answer.participants} participant(s).`
        : "";
    if (outcome.record(result.error, answer, "CrowdBonusesRecorded", words)) {
      setDownloaded(null);
      onChange();
    }
  }

  return (
    <article className="card crowd-study" aria-labelledby={`study-${study.id}`}>
      <h3 id={`study-${study.id}`}>
        {study.name} <span className="muted small">{study.isOpen ? "open" : "closed"}</span>
      </h3>
      <p className="small">
        {study.platform} study <code>{study.externalId}</code> · completion code <code>{study.completionCode}</code> ·{" "}
        {cash(study.payPerVerifiedFooling)} per accepted fooling example, {cash(study.payPerAgreeingValidation)} per
        agreeing vote · at least {study.minimumExamples} example(s) and {study.minimumValidations} vote(s)
      </p>
      {link && (
        <div className="control">
          <label htmlFor={`link-${study.id}`}>Study URL to paste into the platform</label>
          <input id={`link-${study.id}`} type="text" readOnly value={link} onFocus={(event) => event.target.select()} />
          <button
            type="button"
            className="secondary"
            onClick={() => {
              void navigator.clipboard?.writeText(link).then(() => setCopied(true));
            }}
          >
            {copied ? "Copied" : "Copy the URL"}
          </button>
        </div>
      )}
      {study.participants.length === 0 ? (
        <p>Nobody has joined yet.</p>
      ) : (
        <ScrollBox label={`Participants of ${study.name}, scrollable`}>
          <table className="table">
            <caption>
              Participants of {study.name}: {cash(study.earned)} earned, {cash(study.owed)} owed
            </caption>
            <thead>
              <tr>
                <th scope="col">Participant</th>
                <th scope="col">Joined</th>
                <th scope="col">Finished</th>
                <th scope="col">Examples</th>
                <th scope="col">Votes</th>
                <th scope="col">Time</th>
                <th scope="col">Earned</th>
                <th scope="col">Owed</th>
              </tr>
            </thead>
            <tbody>
              {study.participants.map((p) => (
                <tr key={p.username}>
                  <th scope="row">
                    {p.externalId}
                    <span className="muted small block">{p.username}</span>
                  </th>
                  <td>{shortWhen(p.joinedAt)}</td>
                  <td>{p.completedAt ? shortWhen(p.completedAt) : "not yet"}</td>
                  <td>
                    {p.work.examples}
                    <span className="muted small block">
                      {p.work.fooled} fooled · {p.work.verifiedFooling} accepted
                      {p.work.pendingExamples ? ` · ${p.work.pendingExamples} waiting` : ""}
                    </span>
                  </td>
                  <td>
                    {p.work.validations}
                    <span className="muted small block">{p.work.agreeingValidations} agreeing</span>
                  </td>
                  <td>{seconds(p.work.timeTakenMs)}</td>
                  <td>{cash(p.work.earned)}</td>
                  <td>
                    {cash(p.work.owed)}
                    {p.work.uncertain ? (
                      <span className="muted small block">{cash(p.work.uncertain)} paid, unconfirmed</span>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      <p className="actions">
        <button
          type="button"
          className="secondary"
          disabled={!study.bonusFile}
          onClick={() => {
            saveBlob(new Blob([study.bonusFile ?? ""], { type: "text/csv" }), `bonuses-${study.externalId}.csv`);
            setDownloaded(study.bonusFile ?? null);
          }}
        >
          Download the bonus file
        </button>{" "}
        <AskTwice
          label={`Pay the bonuses of ${study.name}`}
          question={`Pay ${cash(study.owed)} through the platform now?`}
          confirm={`Yes, pay ${cash(study.owed)}`}
          busy={paying.fetching || study.owed === 0}
          onConfirm={payAll}
          className="secondary"
        >
          Pay the bonuses
        </AskTwice>{" "}
        {study.isOpen ? (
          <AskTwice
            label={`Close ${study.name}`}
            question="Nobody new can join; those who joined may still finish."
            confirm="Yes, close it"
            busy={opening.fetching}
            onConfirm={toggle}
          >
            Close to new participants
          </AskTwice>
        ) : (
          <button type="button" className="secondary" disabled={opening.fetching} onClick={toggle}>
            Open again
          </button>
        )}
      </p>
      {downloaded && (
        <form className="inline-form" onSubmit={submitted(recordPaid)}>
          <TextInput
            label="Paid on the platform as"
            name="reference"
            required
            id={`reference-${study.id}`}
            hint="Once you have uploaded the file there: the platform's id for the payment, so that it is not owed here any more."
          />
          <button type="submit" className="secondary" disabled={recording.fetching}>
            Record the file as paid
          </button>
        </form>
      )}
      <Outcome outcome={outcome} />
    </article>
  );
}
