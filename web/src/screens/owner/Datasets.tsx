import { useState } from "react";
import { useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { DatasetAccess, OwnerDatasetsQuery } from "../../gql/graphql";
import { useAuth } from "../../lib/auth";
import { problemOf, transportMessage } from "../../lib/errors";
import { uploadFile } from "../../lib/upload";
import { submitted, TextInput } from "../Form";
import { ScrollBox } from "../ScrollBox";
import type { ManagedTask } from "./Manage";
import { AskTwice, FileInput, fileOf, Outcome, Select, textOf, useOutcome, when } from "./parts";

const DatasetList = graphql(`
  query OwnerDatasets($code: String!) {
    task(code: $code) {
      id
      datasets(first: 100) {
        totalCount
        nodes {
          id
          name
          description
          access
          source
          split
          perturbation
          size
          createdAt
        }
      }
    }
  }
`);

const UpdateDataset = graphql(`
  mutation UpdateDataset($input: UpdateDatasetInput!) {
    updateDataset(input: $input) {
      __typename
      ... on DatasetUpdated {
        dataset {
          id
          access
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const DeleteDataset = graphql(`
  mutation DeleteDataset($input: DeleteDatasetInput!) {
    deleteDataset(input: $input) {
      __typename
      ... on DatasetDeleted {
        id
        copyIds
      }
      ... on Error {
        message
      }
    }
  }
`);

// Short, for a table cell: the import form above says what each access means.
const ACCESS_WORDS: Record<DatasetAccess, string> = {
  SCORING: "Scoring",
  STANDARD: "Standard",
  HIDDEN: "Hidden",
};

type Listed = NonNullable<NonNullable<OwnerDatasetsQuery["task"]>["datasets"]>["nodes"][number];

/** A set's access (a copy's follows its parent's) and Delete, asked twice, with what came of them. */
function SetActions({ set, onChanged }: { set: Listed; onChanged: () => void }) {
  const [changing, change] = useMutation(UpdateDataset);
  const [deleting, remove] = useMutation(DeleteDataset);
  const outcome = useOutcome();
  const busy = changing.fetching || deleting.fetching;

  async function setAccess(access: DatasetAccess) {
    const result = await change({ input: { id: set.id, access } });
    const words = `${set.name} is now ${access.toLowerCase()}${set.perturbation ? "" : ", its copies with it"}.`;
    if (outcome.record(result.error, result.data?.updateDataset, "DatasetUpdated", words)) onChanged();
  }

  async function confirmDelete() {
    const result = await remove({ input: { id: set.id } });
    if (outcome.record(result.error, result.data?.deleteDataset, "DatasetDeleted", `Deleted ${set.name}.`)) onChanged();
  }

  return (
    <>
      {set.perturbation ? (
        <span className="small muted">follows its original</span>
      ) : (
        <select
          aria-label={`Access of ${set.name}`}
          value={set.access}
          disabled={busy}
          onChange={(event) => void setAccess(event.currentTarget.value as DatasetAccess)}
        >
          {(Object.keys(ACCESS_WORDS) as DatasetAccess[]).map((access) => (
            <option key={access} value={access}>
              {ACCESS_WORDS[access]}
            </option>
          ))}
        </select>
      )}{" "}
      <AskTwice
        label={`Delete ${set.name}`}
        confirm={`Yes, delete ${set.name}`}
        busy={busy}
        onConfirm={() => void confirmDelete()}
      >
        Delete
      </AskTwice>
      <Outcome outcome={outcome} />
    </>
  );
}

const CreateFromRound = graphql(`
  mutation CreateRoundDatasets($input: CreateRoundDatasetsInput!) {
    createRoundDatasets(input: $input) {
      __typename
      ... on DatasetsCreated {
        datasets {
          id
          name
          size
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

const ImportDataset = graphql(`
  mutation ImportDataset($input: ImportDatasetInput!) {
    importDataset(input: $input) {
      __typename
      ... on DatasetsCreated {
        datasets {
          id
          name
          size
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

const ImportExamples = graphql(`
  mutation ImportExamples($input: ImportExamplesInput!) {
    importExamples(input: $input) {
      __typename
      ... on ExamplesImported {
        count
        roundNumber
        skipped {
          reason
          count
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

const ACCESS: [DatasetAccess, string][] = [
  ["SCORING", "Scoring: ranks models (gold kept from others)"],
  ["STANDARD", "Standard: anyone may download it"],
  ["HIDDEN", "Hidden: owners and admins only"],
];

export default function Datasets({ task }: { task: ManagedTask }) {
  const { session } = useAuth();
  const [list, refresh] = useQuery({
    query: DatasetList,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const [creating, create] = useMutation(CreateFromRound);
  const made = useOutcome();
  const imported = useOutcome();
  const examples = useOutcome();
  const [sending, setSending] = useState(false);
  const reload = () => refresh({ requestPolicy: "network-only" });
  const rounds = [...task.rounds].sort((a, b) => b.number - a.number);

  async function fromRound(form: FormData) {
    const seed = Number(textOf(form, "seed") || "0");
    if (!Number.isInteger(seed)) return made.fail("The seed must be a whole number.");
    const round = Number(form.get("round"));
    const result = await create({ input: { taskCode: task.code, round, seed } });
    const answer = result.data?.createRoundDatasets;
    const names = answer?.__typename === "DatasetsCreated" ? answer.datasets.map((d) => d.name).join(", ") : "";
    if (made.record(result.error, answer, "DatasetsCreated", `Created ${names}.`)) reload();
  }

  async function importSet(form: FormData, element: HTMLFormElement) {
    const file = fileOf(form);
    const name = textOf(form, "name");
    if (!name) return imported.fail("Give the data set a name.");
    if (!file) return imported.fail("Choose a file of examples first.");
    setSending(true);
    const answer = await uploadFile(
      session?.token ?? null,
      ImportDataset,
      {
        input: {
          taskCode: task.code,
          name,
          file,
          format: textOf(form, "format") || "jsonl",
          access: String(form.get("access")) as DatasetAccess,
          description: textOf(form, "description"),
        },
      },
      file,
    );
    setSending(false);
    if (answer.problem !== undefined) return imported.fail(answer.problem);
    const result = answer.data.importDataset;
    const failed = problemOf(undefined, result, "DatasetsCreated");
    if (failed) return imported.fail(failed.message);
    const sets = result.__typename === "DatasetsCreated" ? result.datasets : [];
    imported.succeed(`Imported ${sets.map((d) => `${d.name} (${d.size} items)`).join(", ")}.`);
    element.reset();
    reload();
  }

  async function importInto(form: FormData, element: HTMLFormElement) {
    const file = fileOf(form);
    if (!file) return examples.fail("Choose a file of examples first.");
    const round = textOf(form, "round");
    setSending(true);
    const answer = await uploadFile(
      session?.token ?? null,
      ImportExamples,
      {
        input: {
          taskCode: task.code,
          file,
          format: textOf(form, "format") || "jsonl",
          round: round ? Number(round) : null,
        },
      },
      file,
    );
    setSending(false);
    if (answer.problem !== undefined) return examples.fail(answer.problem);
    const result = answer.data.importExamples;
    const failed = problemOf(undefined, result, "ExamplesImported");
    if (failed) return examples.fail(failed.message);
    if (result.__typename === "ExamplesImported") {
      const skipped = result.skipped.map((s) => `${s.count} skipped: ${s.reason}`).join("; ");
      examples.succeed(
        `Imported ${result.count} examples into round ${result.roundNumber}.${skipped ? ` ${skipped}.` : ""}`,
      );
    }
    element.reset();
  }

  const sets = list.data?.task?.datasets?.nodes ?? [];
  return (
    <section aria-labelledby="datasets-title">
      <h2 id="datasets-title">Data sets</h2>
      <div className="grid2">
        <form className="card" onSubmit={submitted(fromRound)}>
          <h3>From a round</h3>
          <p className="hint">
            A round's accepted examples split 80/10/10 into train, dev (downloadable) and test (scores models).
          </p>
          <Select label="Round" id="ds-round" name="round" defaultValue={rounds[0]?.number}>
            {rounds.map((r) => (
              <option key={r.id} value={r.number}>
                Round {r.number}
              </option>
            ))}
          </Select>
          <TextInput label="Seed" id="ds-seed" name="seed" type="number" defaultValue={0} />
          <button type="submit" disabled={creating.fetching}>
            Create data sets
          </button>
          <Outcome outcome={made} />
        </form>
        <form
          className="card"
          onSubmit={(event) => {
            event.preventDefault();
            void importSet(new FormData(event.currentTarget), event.currentTarget);
          }}
        >
          <h3>Import a data set</h3>
          <TextInput
            label="Name"
            id="ds-name"
            name="name"
            hint="Lowercase letters, digits, _ . - (e.g. anli-r1-dev)."
            maxLength={100}
          />
          <Select label="Access" id="ds-access" name="access" defaultValue="SCORING">
            {ACCESS.map(([value, title]) => (
              <option key={value} value={value}>
                {title}
              </option>
            ))}
          </Select>
          <TextInput label="Description" id="ds-description" name="description" />
          <TextInput
            label="Format"
            id="ds-format"
            name="format"
            defaultValue="jsonl"
            hint="The importer: jsonl reads Dynaforge's own export."
          />
          <FileInput label="Examples file" id="ds-file" accept=".jsonl,.ndjson,.json,.csv,.tsv,.txt" />
          <button type="submit" disabled={sending}>
            Import data set
          </button>
          <Outcome outcome={imported} />
        </form>
      </div>

      <ScrollBox label={`Data sets of ${task.name}, scrollable`}>
        <table className="table">
          <caption>
            Data sets of {task.name}
            {list.data?.task?.datasets ? ` (${list.data.task.datasets.totalCount})` : ""}
          </caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Access</th>
              <th scope="col">Source</th>
              <th scope="col">Items</th>
              <th scope="col">Created</th>
              <th scope="col">Manage</th>
            </tr>
          </thead>
          <tbody>
            {sets.map((d) => (
              <tr key={d.id}>
                <td>
                  {d.name}
                  {d.description && <span className="muted small block">{d.description}</span>}
                </td>
                <td data-access>{d.access.toLowerCase()}</td>
                <td>{d.perturbation ? `${d.source.toLowerCase()} (${d.perturbation})` : d.source.toLowerCase()}</td>
                <td>{d.size}</td>
                <td>{when(d.createdAt)}</td>
                <td>
                  <SetActions set={d} onChanged={reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {list.error && <p role="alert">{transportMessage(list.error)}</p>}

      <form
        className="card"
        onSubmit={(event) => {
          event.preventDefault();
          void importInto(new FormData(event.currentTarget), event.currentTarget);
        }}
      >
        <h3>Import examples into a round</h3>
        <Select label="Into round" id="ex-round" name="round" defaultValue="">
          <option value="">The current round</option>
          {rounds.map((r) => (
            <option key={r.id} value={r.number}>
              Round {r.number}
            </option>
          ))}
        </Select>
        <TextInput label="Format" id="ex-format" name="format" defaultValue="jsonl" />
        <FileInput label="File of examples" id="ex-file" accept=".jsonl,.ndjson,.json,.csv,.tsv,.txt" />
        <button type="submit" disabled={sending}>
          Import examples
        </button>
        <Outcome outcome={examples} />
      </form>
    </section>
  );
}
