import { useMutation } from "urql";
import { graphql } from "../../gql";
import type { ContextStrategy } from "../../gql/graphql";
import { submitted, TextInput } from "../Form";
import type { ManagedTask } from "./Manage";
import { Checkbox, Outcome, Select, TextArea, textOf, useOutcome } from "./parts";

const UpdateSettings = graphql(`
  mutation UpdateTaskSettings($input: UpdateTaskSettingsInput!) {
    updateTaskSettings(input: $input) {
      __typename
      ... on TaskSettingsUpdated {
        task {
          id
          hidden
          active
          instructions
          fooledThreshold
          judgeRubric
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
            breakReminderMinutes
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

const STRATEGIES: [ContextStrategy, string][] = [
  ["LEAST_USED", "Least used first"],
  ["UNIFORM", "At random"],
  ["LEAST_FOOLED", "Least fooled first"],
  ["VALIDATION_FAILED", "Most rejected first"],
];

const KNOWN = [
  "validationQuorum",
  "dailyExampleCap",
  "submissionsPerDay",
  "instructions",
  "fooledThreshold",
  "judgeRubric",
  "nearDuplicateThreshold",
  "breakReminderMinutes",
];

export default function Settings({ task }: { task: ManagedTask }) {
  const [state, update] = useMutation(UpdateSettings);
  const outcome = useOutcome();
  const s = task.settings;

  async function save(form: FormData) {
    const quorum = Number(textOf(form, "quorum"));
    const cap = textOf(form, "cap");
    const submissions = Number(textOf(form, "submissions"));
    if (!Number.isInteger(quorum) || quorum < 1) return outcome.fail("The quorum must be a whole number, 1 or more.");
    if (cap && !/^\d+$/.test(cap)) return outcome.fail("The daily cap must be a whole number (or empty: no change).");
    if (!Number.isInteger(submissions) || submissions < 1)
      return outcome.fail("The submissions a day must be a whole number, 1 or more.");
    const breakText = textOf(form, "break");
    const breakMinutes = breakText ? Number(breakText) : 0;
    if (!Number.isInteger(breakMinutes)) return outcome.fail("The break reminder is a whole number of minutes.");
    const nearText = textOf(form, "near");
    const near = nearText ? Number(nearText) / 100 : 0;
    if (!Number.isFinite(near)) return outcome.fail("The near-duplicate similarity must be a percentage.");
    const threshold = task.fooledThreshold != null ? Number(textOf(form, "threshold")) : null;
    if (threshold !== null && !Number.isFinite(threshold))
      return outcome.fail("The threshold must be a number on the rule's scale.");
    const result = await update({
      input: {
        taskCode: task.code,
        validationQuorum: quorum,
        validateNonFooling: form.get("nonfooling") === "on",
        oneExamplePerTag: form.get("pertag") === "on",
        dailyExampleCap: cap ? Number(cap) : null,
        submissionsPerDay: submissions,
        instructions: String(form.get("instructions") ?? ""),
        contextStrategy: String(form.get("strategy")) as ContextStrategy,
        hidden: form.get("hidden") === "on",
        active: form.get("active") === "on",
        fooledThreshold: threshold,
        judgeRubric: task.judgeRubric != null ? String(form.get("rubric") ?? "") : null,
        nearDuplicateThreshold: near,
        breakReminderMinutes: breakMinutes,
      },
    });
    outcome.record(result.error, result.data?.updateTaskSettings, "TaskSettingsUpdated", "Settings saved.", KNOWN);
  }

  const fields = outcome.problem?.fields ?? {};
  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form onSubmit={submitted(save)} className="owner-form" key={task.id}>
        <TextInput
          label="Validation quorum"
          id="set-quorum"
          name="quorum"
          type="number"
          defaultValue={s.validationQuorum}
          hint="Votes that accept or reject an example."
          error={fields.validationQuorum}
        />
        <TextInput
          label="Daily example cap"
          id="set-cap"
          name="cap"
          type="number"
          min={0}
          defaultValue={s.dailyExampleCap ?? ""}
          hint="Examples a person may write per UTC day; leave empty to keep it as it is."
          error={fields.dailyExampleCap}
        />
        <TextInput
          label="Scored submissions a day"
          id="set-submissions"
          name="submissions"
          type="number"
          min={1}
          defaultValue={s.submissionsPerDay}
          hint="Models, predictions and selections each person may submit in 24 hours; every attempt counts, deleted ones too."
          error={fields.submissionsPerDay}
        />
        <TextInput
          label="Break reminder (minutes)"
          id="set-break"
          name="break"
          type="number"
          min={5}
          max={240}
          defaultValue={s.breakReminderMinutes ?? ""}
          hint="Suggest a break after this much continuous writing or validating; empty: no reminder."
          error={fields.breakReminderMinutes}
        />
        <TextInput
          label="Near-duplicate similarity (%)"
          id="set-near"
          name="near"
          type="number"
          min={50}
          max={100}
          defaultValue={s.nearDuplicateThreshold != null ? Math.round(s.nearDuplicateThreshold * 100) : ""}
          hint="A fooling example at least this similar to an earlier one of the round is shown to its writer before it counts (70 catches a ten-word sentence with one word changed); empty: no check."
          error={fields.nearDuplicateThreshold}
        />
        <Select label="Which context to serve" id="set-strategy" name="strategy" defaultValue={s.contextStrategy}>
          {STRATEGIES.map(([value, title]) => (
            <option key={value} value={value}>
              {title}
            </option>
          ))}
        </Select>
        <TextArea
          label="Instructions"
          id="set-instructions"
          name="instructions"
          rows={4}
          defaultValue={task.instructions}
          error={fields.instructions}
        />
        {task.fooledThreshold != null && (
          <TextInput
            label="Fooled below"
            id="set-threshold"
            name="threshold"
            type="number"
            step="any"
            min={0}
            defaultValue={task.fooledThreshold}
            hint="The model is fooled when the task's metric (or the gold label's probability) is under this number. Examples already decided keep their verdicts."
            error={fields.fooledThreshold}
          />
        )}
        {task.judgeRubric != null && (
          <TextArea
            label="Judge's rubric"
            id="set-rubric"
            name="rubric"
            rows={3}
            defaultValue={task.judgeRubric}
            hint="What makes an answer wrong, as the judge model is told; empty: back to the task's own."
            error={fields.judgeRubric}
          />
        )}
        <Checkbox
          label="Validate examples that did not fool the model"
          id="set-nonfooling"
          name="nonfooling"
          defaultChecked={s.validateNonFooling}
        />
        <Checkbox
          label="One example per context tag"
          id="set-pertag"
          name="pertag"
          defaultChecked={s.oneExamplePerTag}
        />
        <Checkbox
          label="Active (people may write examples)"
          id="set-active"
          name="active"
          defaultChecked={task.active}
        />
        <Checkbox
          label="Hidden (only owners and admins see the task)"
          id="set-hidden"
          name="hidden"
          defaultChecked={task.hidden}
        />
        <button type="submit" disabled={state.fetching}>
          Save settings
        </button>
        <Outcome outcome={outcome} />
      </form>
    </section>
  );
}
