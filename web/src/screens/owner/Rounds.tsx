import { useMemo, useState } from "react";
import { useClient, useMutation, useQuery } from "urql";
import { graphql } from "../../gql";
import type { EnsembleRule } from "../../gql/graphql";
import { lineageText, shortDigest } from "../../lib/retraining";
import { submitted, TextInput } from "../Form";
import type { ManagedTask } from "./Manage";
import { AskTwice, Checkbox, Outcome, Select, TextArea, textOf, useOutcome, when } from "./parts";
import { Digest } from "./registry";

const TaskModels = graphql(`
  query OwnerTaskModels($code: String!) {
    task(code: $code) {
      id
      models(first: 50) {
        nodes {
          id
          name
          backend
          config
          status
          submitter {
            id
            username
          }
        }
      }
    }
  }
`);

const ModelById = graphql(`
  query ModelById($id: ID!) {
    model(id: $id) {
      id
      name
      backend
      config
      task {
        id
        code
      }
    }
  }
`);

const OpenNextRound = graphql(`
  mutation OpenNextRound($input: OpenNextRoundInput!) {
    openNextRound(input: $input) {
      __typename
      ... on RoundOpened {
        round {
          id
          number
          startedAt
          endedAt
          ensembleRule
          targetModels {
            name
            backend
            config
            registered {
              ...RegisteredModelParts
            }
          }
        }
        previous {
          id
          number
          endedAt
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

const CloseRound = graphql(`
  mutation CloseRound($input: CloseRoundInput!) {
    closeRound(input: $input) {
      __typename
      ... on RoundEnded {
        round {
          id
          number
          endedAt
        }
      }
      ... on Error {
        message
      }
    }
  }
`);

const SetTargets = graphql(`
  mutation SetTargetModels($input: SetTargetModelsInput!) {
    setTargetModels(input: $input) {
      __typename
      ... on TargetModelsSet {
        round {
          id
          number
          ensembleRule
          targetModels {
            name
            backend
            config
            registered {
              ...RegisteredModelParts
            }
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

/** A model the owner may put in the loop, and where it came from. */
interface Candidate {
  key: string;
  name: string;
  backend: string;
  config: unknown;
  origin: string;
}

/** JSON with sorted keys: the same configuration gives the same text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value ?? null);
}

const RULES: [EnsembleRule, string][] = [
  ["MAJORITY", "Majority: fooled when most models are wrong"],
  ["ANY_WRONG", "Any wrong: fooled when one model is wrong"],
  ["ALL_WRONG", "All wrong: fooled when every model is wrong"],
];

export default function Rounds({ task, onChanged }: { task: ManagedTask; onChanged: () => void }) {
  const round = task.currentRound;
  const [models] = useQuery({ query: TaskModels, variables: { code: task.code } });
  const client = useClient();
  const [added, setAdded] = useState<Candidate[]>([]);
  const [chosen, setChosen] = useState<Record<string, boolean>>({});
  const [opening, open] = useMutation(OpenNextRound);
  const [closing, close] = useMutation(CloseRound);
  const [setting, setTargets] = useMutation(SetTargets);
  const openOutcome = useOutcome();
  const closeOutcome = useOutcome();
  const addOutcome = useOutcome();

  const taskModels = models.data?.task?.models?.nodes ?? [];
  const candidates = useMemo(() => {
    const list: Candidate[] = [];
    const seen = new Set<string>();
    const push = (c: Candidate) => {
      const id = `${c.backend}:${canonical(c.config)}`;
      if (seen.has(id)) return;
      seen.add(id);
      list.push(c);
    };
    for (const t of round?.targetModels ?? []) {
      const from = taskModels.find((m) => m.backend === t.backend && canonical(m.config) === canonical(t.config));
      const registry = t.registered ? `: ${lineageText(t.registered)}` : "";
      push({
        key: `current:${t.name}`,
        name: t.name,
        backend: t.backend,
        config: t.config,
        origin: from
          ? `round ${round?.number}'s target${registry}; the task's model ${from.name}`
          : `round ${round?.number}'s target${registry}`,
      });
    }
    for (const m of taskModels) {
      if (!m.backend || m.config == null) continue;
      push({
        key: `model:${m.id}`,
        name: m.name,
        backend: m.backend,
        config: m.config,
        origin: `the task's model ${m.name}${m.submitter ? `, submitted by ${m.submitter.username}` : ""}`,
      });
    }
    for (const c of added) push(c);
    return list;
  }, [round, taskModels, added]);

  const isChosen = (c: Candidate) => chosen[c.key] ?? c.key.startsWith("current:");
  const picked = candidates.filter(isChosen);
  const targetInput = () => picked.map((c) => ({ name: c.name, backend: c.backend, config: c.config ?? {} }));

  async function addById(form: FormData) {
    const id = textOf(form, "modelId");
    if (!id) return addOutcome.fail("Enter a model's id (the Models page shows it).");
    const result = await client.query(ModelById, { id }, { requestPolicy: "network-only" }).toPromise();
    const model = result.data?.model;
    if (!model) return addOutcome.fail(`No model with the id ${id} that you can see.`);
    if (model.task.code !== task.code) return addOutcome.fail(`Model ${model.name} belongs to another task.`);
    if (!model.backend || model.config == null)
      return addOutcome.fail(`Model ${model.name} has no backend configuration that a round can use.`);
    const key = `model:${model.id}`;
    setAdded((list) => [
      ...list.filter((c) => c.key !== key),
      { key, name: model.name, backend: model.backend ?? "", config: model.config, origin: `model ${model.id}` },
    ]);
    setChosen((c) => ({ ...c, [key]: true }));
    addOutcome.succeed(`Added ${model.name}.`);
  }

  async function openNext(form: FormData) {
    if (opening.fetching) return;
    const next = (round?.number ?? 0) + 1;
    const result = await open({
      input: {
        taskCode: task.code,
        currentRound: round?.number ?? 0, // a second click (or another owner first) opens nothing more
        targetModels: picked.length ? targetInput() : null,
        ensembleRule: picked.length > 1 ? (String(form.get("rule")) as EnsembleRule) : null,
        description: String(form.get("description") ?? ""),
        copyContexts: form.get("copy") === "on",
      },
    });
    if (openOutcome.record(result.error, result.data?.openNextRound, "RoundOpened", `Round ${next} is open.`)) {
      setChosen({});
      setAdded([]);
      onChanged();
    }
  }

  async function retarget(rule: EnsembleRule) {
    if (!picked.length) return openOutcome.fail("Choose at least one target model.");
    const result = await setTargets({ input: { taskCode: task.code, models: targetInput(), ensembleRule: rule } });
    if (
      openOutcome.record(
        result.error,
        result.data?.setTargetModels,
        "TargetModelsSet",
        `Round ${round?.number} now plays against ${picked.map((c) => c.name).join(", ")}.`,
      )
    ) {
      setChosen({});
      onChanged();
    }
  }

  async function closeCurrent() {
    if (closing.fetching) return;
    const result = await close({ input: { taskCode: task.code } });
    if (closeOutcome.record(result.error, result.data?.closeRound, "RoundEnded", `Round ${round?.number} is closed.`))
      onChanged();
  }

  const busy = opening.fetching || setting.fetching;
  return (
    <section aria-labelledby="rounds-title">
      <h2 id="rounds-title">Rounds</h2>
      {round ? (
        <div className="card">
          <h3>
            Round {round.number} {round.endedAt ? "(closed)" : "(open)"}
          </h3>
          <p className="muted small">
            Started {when(round.startedAt)}
            {round.endedAt ? `, closed ${when(round.endedAt)}` : ""}; {round.collected} examples.
          </p>
          {round.description && <p>{round.description}</p>}
          <table className="table">
            <caption>Target models of round {round.number}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Backend</th>
                <th scope="col">Where from</th>
                <th scope="col">Weights</th>
                <th scope="col">Recipe</th>
              </tr>
            </thead>
            <tbody>
              {round.targetModels.map((t) => (
                <tr key={t.name}>
                  <td>{t.name}</td>
                  <td>{t.backend}</td>
                  <td data-lineage>
                    {t.registered
                      ? lineageText(t.registered)
                      : "not in the model registry (the round was opened before it existed)"}
                  </td>
                  <td>{t.registered ? <Digest weights={t.registered.weights} /> : "–"}</td>
                  <td>
                    {t.registered?.recipe ?? "none"}
                    {t.registered?.seed != null && <span className="muted small block">seed {t.registered.seed}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {round.targetModels.length > 1 && <p className="small">Ensemble rule: {round.ensembleRule}</p>}
          {!round.endedAt && (
            <p className="actions">
              <AskTwice
                label={`Close round ${round.number}`}
                question="Annotators cannot write examples until a next round opens."
                confirm={`Yes, close round ${round.number}`}
                busy={closing.fetching}
                onConfirm={closeCurrent}
              >
                Close round {round.number}
              </AskTwice>
            </p>
          )}
          <Outcome outcome={closeOutcome} />
        </div>
      ) : (
        <p>The task has no round yet.</p>
      )}

      <div className="card">
        <h3>Target models</h3>
        <form onSubmit={submitted(addById)} className="inline-form">
          <TextInput label="Model id" id="round-model-id" name="modelId" hint="Add a model of this task by its id." />
          <button type="submit" className="secondary">
            Add model
          </button>
        </form>
        <Outcome outcome={addOutcome} />
        <form onSubmit={submitted(openNext)}>
          <fieldset className="control">
            <legend>Play against</legend>
            {models.fetching && !models.data && <p className="muted">Loading the task's models…</p>}
            {candidates.length === 0 && <p className="muted">No model to choose: the current targets stay.</p>}
            {candidates.map((c) => (
              <div className="check" key={c.key}>
                <input
                  type="checkbox"
                  id={`cand-${c.key}`}
                  checked={isChosen(c)}
                  onChange={(e) => {
                    const value = e.currentTarget.checked;
                    setChosen((m) => ({ ...m, [c.key]: value }));
                  }}
                  aria-describedby={`cand-${c.key}-from`}
                />
                <label htmlFor={`cand-${c.key}`}>
                  {c.name} <span className="muted">({c.backend})</span>
                </label>
                <p className="hint" id={`cand-${c.key}-from`}>
                  From {c.origin}
                </p>
              </div>
            ))}
          </fieldset>
          <Select
            label="Ensemble rule (with several models)"
            id="round-rule"
            name="rule"
            defaultValue={round?.ensembleRule}
          >
            {RULES.map(([value, title]) => (
              <option key={value} value={value}>
                {title}
              </option>
            ))}
          </Select>
          <TextArea label="Description of the next round" id="round-description" name="description" maxLength={5000} />
          <Checkbox label="Copy this round's contexts into the next round" id="round-copy" name="copy" defaultChecked />
          <p className="actions">
            <AskTwice
              label={`Open round ${(round?.number ?? 0) + 1}`}
              question={`${round && !round.endedAt ? `Round ${round.number} closes and round` : "Round"} ${
                (round?.number ?? 0) + 1
              } opens. This cannot be undone.`}
              confirm={`Yes, open round ${(round?.number ?? 0) + 1}`}
              busy={busy}
              submit
              className=""
            >
              Open round {(round?.number ?? 0) + 1}
            </AskTwice>
            {round && !round.endedAt && (
              <button
                type="button"
                className="secondary"
                disabled={busy}
                onClick={(e) => {
                  const rule = new FormData(e.currentTarget.form ?? undefined).get("rule");
                  void retarget(String(rule ?? "MAJORITY") as EnsembleRule);
                }}
              >
                Use them in round {round.number}
              </button>
            )}
          </p>
          <Outcome outcome={openOutcome} />
        </form>
      </div>

      <table className="table">
        <caption>Every round</caption>
        <thead>
          <tr>
            <th scope="col">Round</th>
            <th scope="col">Started</th>
            <th scope="col">Closed</th>
            <th scope="col">Target</th>
            <th scope="col">Examples</th>
            <th scope="col">Fooled</th>
          </tr>
        </thead>
        <tbody>
          {task.rounds.map((r) => (
            <tr key={r.id}>
              <td>{r.number}</td>
              <td>{when(r.startedAt)}</td>
              <td>{r.endedAt ? when(r.endedAt) : "open"}</td>
              <td>
                {r.targetModels
                  .map((t) => {
                    const about = [t.registered?.origin.toLowerCase(), shortDigest(t.registered?.weights)];
                    const said = about.filter(Boolean).join(", ");
                    return said ? `${t.name} (${said})` : t.name;
                  })
                  .join("; ")}
              </td>
              <td>{r.collected}</td>
              <td>{r.fooled}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
