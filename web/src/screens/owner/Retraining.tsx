// Retraining, for a task's owners: the task's training recipes, a form that trains a candidate target model on the
// platform's data sets, the training jobs with live progress (trainingProgress), and the round x model matrix that
// compares every registered model on each round's test set, where a model is promoted to target the next round.
import "./retraining.css";
import { useCallback, useState } from "react";
import { useMutation, useQuery } from "urql";
import { Link } from "wouter";
import { graphql } from "../../gql";
import type { DatasetSplit, RetrainingRecipesQuery } from "../../gql/graphql";
import { problemOf, transportMessage } from "../../lib/errors";
import {
  type HyperKind,
  type HyperValue,
  hyperField,
  hyperKind,
  hyperparameterEntries,
  hyperText,
  kindsOf,
  readHyperparameters,
  trainingChoices,
  withFormKeys,
} from "../../lib/retraining";
import { submitted, TextInput } from "../Form";
import type { ManagedTask } from "./Manage";
import { ModelMatrix, REGISTRY_SHOWN, Registry } from "./ModelMatrix";
import { Checkbox, Outcome, Select, textOf, useOutcome } from "./parts";
import { JOBS_SHOWN, JobList, Jobs } from "./TrainingJobs";

const Recipes = graphql(`
  query RetrainingRecipes($code: String!) {
    task(code: $code) {
      id
      trainingRecipes {
        name
        model
        description
        parameters {
          name
          type
          default
        }
        baseData
        baseDataAvailable
      }
    }
  }
`);

const TrainingDatasets = graphql(`
  query RetrainingDatasets($code: String!) {
    task(code: $code) {
      id
      datasets(first: 100) {
        nodes {
          id
          name
          source
          split
          perturbation
          size
        }
      }
    }
  }
`);

const TrainCandidate = graphql(`
  mutation TrainCandidateModel($input: TrainCandidateModelInput!) {
    trainCandidateModel(input: $input) {
      __typename
      ... on TrainingStarted {
        job {
          id
          status
          recipe
        }
      }
      ... on Error {
        message
      }
      ... on QuotaExceeded {
        resetsInSeconds
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

type Recipe = NonNullable<NonNullable<RetrainingRecipesQuery["task"]>["trainingRecipes"]>[number];

/** The recipe's hyper-parameters with their defaults, by name, in its order. */
const defaultsOf = (recipe: Recipe): Record<string, unknown> =>
  Object.fromEntries(recipe.parameters.map((p) => [p.name, p.default]));

export default function Retraining({ task, onChanged }: { task: ManagedTask; onChanged: () => void }) {
  const variables = { code: task.code };
  const [recipes] = useQuery({ query: Recipes, variables });
  const [registry, refreshRegistry] = useQuery({
    query: Registry,
    variables: { code: task.code, registered: REGISTRY_SHOWN },
    requestPolicy: "cache-and-network",
  });
  const [jobs, refreshJobs] = useQuery({
    query: Jobs,
    variables: { code: task.code, first: JOBS_SHOWN },
    requestPolicy: "cache-and-network",
  });
  const reloadRegistry = useCallback(() => refreshRegistry({ requestPolicy: "network-only" }), [refreshRegistry]);
  const reloadJobs = useCallback(() => refreshJobs({ requestPolicy: "network-only" }), [refreshJobs]);
  const jobEnded = useCallback(() => {
    reloadJobs();
    reloadRegistry();
  }, [reloadJobs, reloadRegistry]);

  const list = recipes.data?.task?.trainingRecipes ?? [];
  const jobList = jobs.data?.task?.trainingJobs?.nodes ?? [];
  return (
    <section aria-labelledby="retraining-title" className="retraining">
      <h2 id="retraining-title">Retraining</h2>
      <p className="lead">
        Train a candidate target model on the rounds' data, compare it with the models the rounds targeted on each
        round's test set, and promote the one the next round should play against.
      </p>

      <section aria-labelledby="recipes-title">
        <h3 id="recipes-title">Training recipes</h3>
        {recipes.error && <p role="alert">{transportMessage(recipes.error)}</p>}
        {recipes.fetching && !recipes.data && <p className="muted">Loading the recipes…</p>}
        {recipes.data && list.length === 0 && (
          <p data-no-recipe>
            {task.name} declares no training recipe, so candidates cannot be trained on the platform. The matrix below
            still compares the models the rounds targeted.
          </p>
        )}
        {list.map((recipe) => (
          <RecipeCard key={recipe.name} recipe={recipe} code={task.code} />
        ))}
      </section>

      {list.length > 0 && <TrainForm task={task} recipes={list} onStarted={reloadJobs} />}

      {(list.length > 0 || jobList.length > 0 || jobs.error) && (
        <section aria-labelledby="jobs-title">
          <h3 id="jobs-title">Training jobs</h3>
          {jobs.error && <p role="alert">{transportMessage(jobs.error)}</p>}
          <JobList
            jobs={jobList}
            total={jobs.data?.task?.trainingJobs?.totalCount ?? 0}
            cursor={jobs.data?.task?.updatesCursor}
            code={task.code}
            onEnded={jobEnded}
            reload={reloadJobs}
          />
        </section>
      )}

      <ModelMatrix
        task={task}
        data={registry.data}
        error={registry.error ? transportMessage(registry.error) : ""}
        reload={reloadRegistry}
        onPromoted={() => {
          reloadRegistry();
          onChanged();
        }}
      />
    </section>
  );
}

function RecipeCard({ recipe, code }: { recipe: Recipe; code: string }) {
  const parameters = hyperparameterEntries(defaultsOf(recipe));
  const kinds = kindsOf(recipe.parameters);
  return (
    <article className="card" aria-labelledby={`recipe-${recipe.name}`}>
      <h4 id={`recipe-${recipe.name}`}>{recipe.name}</h4>
      <p className="muted small">Trains {recipe.model}</p>
      {recipe.description && <p>{recipe.description}</p>}
      {parameters.length ? (
        <table className="table">
          <caption>Hyper-parameters of {recipe.name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Default</th>
              <th scope="col">Type</th>
            </tr>
          </thead>
          <tbody>
            {parameters.map(([name, value]) => (
              <tr key={name}>
                <td>
                  <code>{name}</code>
                </td>
                <td>{hyperText(value)}</td>
                <td>{kinds[name] ?? hyperKind(value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="small">It takes no hyper-parameters.</p>
      )}
      <p className="small">
        Base data:{" "}
        {recipe.baseData
          ? `${recipe.baseData}; ${
              recipe.baseDataAvailable
                ? "this server holds it."
                : `this server lacks it (the operator puts it in DYNAFORGE_TRAINING_DATA_DIR/${code}/).`
            }`
          : "none (it trains on the platform's examples alone)."}
      </p>
    </article>
  );
}

// ------------------------------------------------------------------ training a candidate

const controlId = (name: string) => `hp-${name.replace(/[^\w-]+/g, "-")}`;

function HyperInput({
  name,
  value,
  kind,
  error,
}: {
  name: string;
  value: HyperValue;
  kind: HyperKind;
  error?: string;
}) {
  const id = controlId(name);
  if (kind === "boolean")
    return (
      <>
        <Checkbox
          label={name}
          id={id}
          name={hyperField(name)}
          defaultChecked={value === true}
          hint={`Default ${hyperText(value)}.`}
        />
        {error && <p className="error">{error}</p>}
      </>
    );
  return (
    <TextInput
      label={name}
      id={id}
      name={hyperField(name)}
      type={kind === "text" ? "text" : "number"}
      step={kind === "integer" ? 1 : kind === "number" ? "any" : undefined}
      defaultValue={String(value)}
      hint={`Default ${hyperText(value)}.`}
      error={error}
    />
  );
}

function TrainForm({ task, recipes, onStarted }: { task: ManagedTask; recipes: Recipe[]; onStarted: () => void }) {
  const [sets] = useQuery({
    query: TrainingDatasets,
    variables: { code: task.code },
    requestPolicy: "cache-and-network",
  });
  const [recipeName, setRecipeName] = useState(recipes[0]?.name ?? "");
  const [chosen, setChosen] = useState<Record<string, boolean>>({});
  const [fields, setFields] = useState<Record<string, string>>({});
  const [training, train] = useMutation(TrainCandidate);
  const outcome = useOutcome();
  const recipe = recipes.find((r) => r.name === recipeName) ?? recipes[0];
  const choices = trainingChoices(sets.data?.task?.datasets?.nodes ?? []);
  const isChosen = (d: { id: string; split?: DatasetSplit | null }) => chosen[d.id] ?? d.split === "TRAIN";
  if (!recipe) return null;
  const defaults = hyperparameterEntries(defaultsOf(recipe));
  const kinds = kindsOf(recipe.parameters);

  async function start(form: FormData) {
    if (!recipe) return;
    const { values, errors } = readHyperparameters(form, defaults, kinds);
    const seed = Number(textOf(form, "seed") || "0");
    if (!Number.isInteger(seed)) errors.seed = "The seed must be a whole number.";
    if (Object.keys(errors).length) {
      setFields(errors);
      return outcome.fail("Training did not start: fix the fields marked below.");
    }
    const picked = choices.filter(isChosen);
    const result = await train({
      input: {
        taskCode: task.code,
        datasets: picked.map((d) => d.id),
        recipe: recipe.name,
        hyperparameters: values,
        seed,
        includeBaseData: form.get("includeBaseData") === "on",
      },
    });
    const answer = result.data?.trainCandidateModel;
    const known = ["datasets", "recipe", "seed", "includeBaseData", ...defaults.map(([name]) => hyperField(name))];
    const problem = problemOf(result.error, answer ? withFormKeys(answer) : answer, "TrainingStarted", known);
    setFields(problem?.fields ?? {});
    if (problem) return outcome.fail(problem.message);
    const on = picked.map((d) => d.name).join(", ") || "the base data";
    outcome.succeed(`Training job queued: recipe ${recipe.name} on ${on}, seed ${seed}.`);
    onStarted();
  }

  const baseHint = !recipe.baseData
    ? `Recipe ${recipe.name} uses no base data.`
    : recipe.baseDataAvailable
      ? `Adds ${recipe.baseData} to the data sets.`
      : `Unavailable: this server lacks ${recipe.baseData} (the operator puts it in DYNAFORGE_TRAINING_DATA_DIR/${task.code}/).`;
  return (
    <form className="card owner-form" aria-labelledby="train-title" onSubmit={submitted(start)}>
      <h3 id="train-title">Train a candidate</h3>
      <Select
        label="Recipe"
        id="train-recipe"
        name="recipe"
        value={recipe.name}
        onChange={(e) => {
          setRecipeName(e.currentTarget.value);
          setFields({});
        }}
        aria-describedby={fields.recipe ? "train-recipe-error" : undefined}
      >
        {recipes.map((r) => (
          <option key={r.name} value={r.name}>
            {r.name} (trains {r.model})
          </option>
        ))}
      </Select>
      {fields.recipe && (
        <p className="error" id="train-recipe-error">
          {fields.recipe}
        </p>
      )}

      <fieldset className="control" aria-describedby={fields.datasets ? "train-datasets-error" : undefined}>
        <legend>Data sets to train on</legend>
        {sets.fetching && !sets.data && <p className="muted">Loading the data sets…</p>}
        {sets.data && choices.length === 0 && (
          <p className="muted">
            No data set yet:{" "}
            <Link href={`/tasks/${encodeURIComponent(task.code)}/manage/datasets`}>make a round's data sets</Link>{" "}
            first.
          </p>
        )}
        {choices.map((d) => (
          <Checkbox
            key={d.id}
            label={d.name}
            id={`train-set-${d.id}`}
            checked={isChosen(d)}
            onChange={(e) => {
              const value = e.currentTarget.checked;
              setChosen((c) => ({ ...c, [d.id]: value }));
            }}
            hint={`${d.split ? `${d.split.toLowerCase()} split of a round` : "uploaded"}, ${d.size} item${d.size === 1 ? "" : "s"}`}
          />
        ))}
        {fields.datasets && (
          <p className="error" id="train-datasets-error">
            {fields.datasets}
          </p>
        )}
      </fieldset>

      <fieldset className="control" key={recipe.name}>
        <legend>Hyper-parameters of {recipe.name}</legend>
        {defaults.length === 0 && <p className="muted">The recipe takes none.</p>}
        {defaults.map(([name, value]) => (
          <HyperInput
            key={name}
            name={name}
            value={value}
            kind={kinds[name] ?? hyperKind(value)}
            error={fields[hyperField(name)]}
          />
        ))}
      </fieldset>

      <TextInput
        label="Seed"
        id="train-seed"
        name="seed"
        type="number"
        min={0}
        step={1}
        defaultValue={0}
        hint="The same data, recipe, hyper-parameters and seed give the same weights."
        error={fields.seed}
      />
      <Checkbox
        key={`base-${recipe.name}`}
        label="Include the task's base data"
        id="train-base"
        name="includeBaseData"
        disabled={!recipe.baseData || !recipe.baseDataAvailable}
        hint={baseHint}
      />
      {fields.includeBaseData && <p className="error">{fields.includeBaseData}</p>}
      <p className="actions">
        <button type="submit" disabled={training.fetching}>
          Train a candidate
        </button>
      </p>
      <Outcome outcome={outcome} />
    </form>
  );
}
