// Submit a model to a task: upload a model archive (a Hugging Face folder as .tar.gz or .zip, with upload progress)
// or name an http endpoint. Either way the server's typed errors are shown beside the field they concern.
import { useRef, useState } from "react";
import { useMutation, useQuery } from "urql";
import { useLocation } from "wouter";
import { graphql } from "../gql";
import { useAuth } from "../lib/auth";
import { type Problem, problemOf } from "../lib/errors";
import { allowanceText, bytes, isModelArchive, modelHref, parseJsonObject } from "../lib/models";
import { type UploadProgress, uploadOperation } from "../lib/uploadProgress";
import { ProblemBox, TextInput } from "./Form";

const UploadModel = graphql(`
  mutation UploadModel($input: UploadModelInput!) {
    uploadModel(input: $input) {
      __typename
      ... on ModelUploaded {
        artifact
        size
        stored
        model {
          id
          name
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
      ... on QuotaExceeded {
        resetsInSeconds
      }
    }
  }
`);

// What is left of the day's allowance: shown beside the form, so a refusal is never a surprise.
const Allowance = graphql(`
  query SubmitAllowance($code: String!) {
    task(code: $code) {
      id
      viewerSubmissions {
        limit
        used
        left
        nextAt
      }
    }
  }
`);

const SubmitModel = graphql(`
  mutation SubmitModel($input: SubmitModelInput!) {
    submitModel(input: $input) {
      __typename
      ... on ModelSubmitted {
        model {
          id
          name
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
      ... on QuotaExceeded {
        resetsInSeconds
      }
    }
  }
`);

type UploadAnswer = {
  uploadModel: {
    __typename: string;
    model?: { id: string };
    message?: string;
    retryAfterSeconds?: number;
    fieldErrors?: { field: string[]; message: string }[];
  } | null;
};

/** A refusal whose reasons all sit beside their fields: say so once instead of repeating them. */
function placed(problem: Problem | null, answer: object | null | undefined): Problem | null {
  const errors = (answer as { fieldErrors?: readonly { field: readonly string[] }[] } | null)?.fieldErrors ?? [];
  if (!problem || errors.length === 0 || !errors.every((fe) => fe.field.some((part) => KNOWN.includes(part))))
    return problem;
  return { ...problem, message: "The server refused the model: see the fields marked above." };
}

/** The form's fields that a server error can name (the last part of FieldError.field). */
const KNOWN = [
  "name",
  "file",
  "url",
  "options",
  "config",
  "parameters",
  "license",
  "paper",
  "description",
  "trainingData",
];

type Kind = "archive" | "http";

export default function ModelSubmit({ code, labels }: { code: string; labels: readonly string[] }) {
  const { session } = useAuth();
  const [, navigate] = useLocation();
  const [kind, setKind] = useState<Kind>("archive");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [uploading, setUploading] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const [submitting, submitModel] = useMutation(SubmitModel);
  const busy = uploading || submitting.fetching;
  const [allowance] = useQuery({
    query: Allowance,
    variables: { code },
    pause: !session,
    requestPolicy: "cache-and-network",
  });
  const left = allowance.data?.task?.viewerSubmissions;
  const errors = problem?.fields ?? {};

  async function submit(form: FormData) {
    const name = String(form.get("name") ?? "").trim();
    const options = parseJsonObject(String(form.get("options") ?? ""));
    const card = cardOf(form);
    const local: Record<string, string> = {};
    if (!name) local.name = "Give the model a name.";
    if (options.error) local.options = options.error;
    if (card.error) local.parameters = card.error;
    const published = form.get("published") === "on";
    const anonymous = form.get("anonymous") === "on";
    if (kind === "archive") {
      const file = form.get("file");
      if (!(file instanceof File) || !file.name) local.file = "Choose the model archive to upload.";
      else if (!isModelArchive(file.name)) local.file = "Choose a .tar.gz, .tgz, .tar or .zip archive.";
      if (Object.keys(local).length || !(file instanceof File))
        return setProblem({ message: "Check the fields marked below.", fields: local });
      setProblem(null);
      setUploading(true);
      setProgress({ loaded: 0, total: file.size });
      abort.current = new AbortController();
      const outcome = await uploadOperation<UploadAnswer>({
        document: UploadModel,
        variables: {
          input: { taskCode: code, name, file: null, options: options.value, card: card.value, published, anonymous },
        },
        filePath: "input.file",
        file,
        token: session?.token ?? null,
        onProgress: setProgress,
        signal: abort.current.signal,
      });
      setUploading(false);
      abort.current = null;
      if (outcome.failure) return setProblem({ message: outcome.failure, fields: {} });
      const answer = outcome.data?.uploadModel;
      const failed = placed(problemOf(undefined, answer, "ModelUploaded", KNOWN), answer);
      if (failed) return setProblem(failed);
      if (answer?.model) navigate(modelHref(code, answer.model.id));
      return;
    }
    const url = String(form.get("url") ?? "").trim();
    if (!/^https?:\/\/\S+$/i.test(url)) local.url = "Give the endpoint's address, starting with http:// or https://.";
    if (Object.keys(local).length) return setProblem({ message: "Check the fields marked below.", fields: local });
    const result = await submitModel({
      input: {
        taskCode: code,
        name,
        backend: "http",
        config: { ...(options.value ?? {}), url },
        card: card.value,
        published,
        anonymous,
      },
    });
    const answer = result.data?.submitModel;
    const failed = placed(problemOf(result.error, answer, "ModelSubmitted", KNOWN), answer);
    setProblem(failed);
    if (!failed && answer?.__typename === "ModelSubmitted") navigate(modelHref(code, answer.model.id));
  }

  const percent = progress?.total ? Math.round((progress.loaded / progress.total) * 100) : 0;
  return (
    <section className="card submit-model" aria-labelledby="submit-model">
      <h2 id="submit-model">Submit a model</h2>
      {left && (
        <p className="small muted" data-allowance>
          {allowanceText(left.left, left.limit, left.nextAt)}
        </p>
      )}
      <form
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void submit(new FormData(event.currentTarget));
        }}
      >
        <fieldset className="control">
          <legend>What to submit</legend>
          <div className="choices">
            <label className="choice">
              <input
                type="radio"
                name="kind"
                value="archive"
                checked={kind === "archive"}
                onChange={() => setKind("archive")}
              />
              Upload a model archive
            </label>
            <label className="choice">
              <input type="radio" name="kind" value="http" checked={kind === "http"} onChange={() => setKind("http")} />
              An HTTP endpoint
            </label>
          </div>
        </fieldset>
        <TextInput label="Model name" name="name" id="model-name" maxLength={100} required error={errors.name} />
        {kind === "archive" ? (
          <FileInput error={errors.file} labels={labels} />
        ) : (
          <TextInput
            label="Endpoint URL"
            name="url"
            id="model-url"
            type="url"
            inputMode="url"
            placeholder="https://models.example.org/predict"
            hint="The address of a model server that speaks the http backend's protocol (docs/model-server.md). The server calls it from outside; internal addresses are refused."
            error={errors.url ?? errors.config}
          />
        )}
        <JsonArea
          id="model-options"
          label="Options (JSON, optional)"
          hint={
            kind === "archive"
              ? 'How the model reads the task, e.g. {"label_map": {"LABEL_0": "negative"}, "max_length": 128}.'
              : 'More of the http backend\'s configuration, e.g. {"timeout_s": 10, "headers": {"X-Key": "…"}}.'
          }
          error={errors.options}
        />
        <details className="card-fields">
          <summary>Model card (optional)</summary>
          <TextInput
            label="Parameters"
            name="parameters"
            id="card-parameters"
            inputMode="numeric"
            error={errors.parameters}
          />
          <TextInput label="Licence" name="license" id="card-license" maxLength={100} error={errors.license} />
          <TextInput label="Paper" name="paper" id="card-paper" type="url" maxLength={500} error={errors.paper} />
          <JsonArea id="card-description" label="Description" name="description" plain error={errors.description} />
          <JsonArea id="card-training" label="Training data" name="trainingData" plain error={errors.trainingData} />
        </details>
        <div className="checks">
          <label className="choice">
            <input type="checkbox" name="published" /> Publish it on the leaderboard now
          </label>
          <label className="choice">
            <input type="checkbox" name="anonymous" /> Hide my name (anonymous)
          </label>
        </div>
        {uploading && progress && (
          <div className="upload-progress">
            <label htmlFor="upload-progress">Uploading the archive</label>
            <progress id="upload-progress" max={100} value={percent} />
            <p className="muted small" aria-live="polite">
              {percent}% ({bytes(progress.loaded)} of {bytes(progress.total)})
              {progress.loaded >= progress.total && " sent; the server is checking the files…"}
            </p>
          </div>
        )}
        <div className="actions">
          <button type="submit" disabled={busy}>
            {kind === "archive" ? "Upload and submit" : "Submit model"}
          </button>
          {uploading && (
            <button type="button" className="secondary" onClick={() => abort.current?.abort()}>
              Cancel upload
            </button>
          )}
        </div>
        <ProblemBox problem={problem} />
      </form>
    </section>
  );
}

function cardOf(form: FormData): { value: Record<string, unknown> | null; error: string | null } {
  const text = (key: string) => String(form.get(key) ?? "").trim() || null;
  const parametersText = text("parameters");
  const parameters = parametersText == null ? null : Number(parametersText.replace(/[_,\s]/g, ""));
  if (parameters != null && !(Number.isInteger(parameters) && parameters >= 0))
    return { value: null, error: "Parameters must be a whole number, 0 or more." };
  const card = {
    parameters,
    license: text("license"),
    paper: text("paper"),
    description: text("description"),
    trainingData: text("trainingData"),
  };
  const given = Object.values(card).some((v) => v != null);
  return { value: given ? card : null, error: null };
}

function FileInput({ error, labels }: { error?: string; labels: readonly string[] }) {
  const described = ["model-file-hint", error && "model-file-error"].filter(Boolean).join(" ");
  return (
    <div className="control">
      <label htmlFor="model-file">Model archive</label>
      <p className="hint" id="model-file-hint">
        A .tar.gz or .zip of the folder that <code>save_pretrained(folder, safe_serialization=True)</code> and the
        tokenizer's <code>save_pretrained</code> wrote: config.json, tokenizer files, *.safetensors weights. No pickle
        files, no code.{labels.length > 0 && ` The task's labels: ${labels.join(", ")}.`}
      </p>
      <input
        id="model-file"
        name="file"
        type="file"
        accept=".tar.gz,.tgz,.tar,.zip,application/gzip,application/x-tar,application/zip"
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
      />
      {error && (
        <p className="error" id="model-file-error">
          {error}
        </p>
      )}
    </div>
  );
}

function JsonArea({
  id,
  label,
  hint,
  error,
  name = "options",
  plain = false,
}: {
  id: string;
  label: string;
  hint?: string;
  error?: string;
  name?: string;
  plain?: boolean;
}) {
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className="control">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <textarea
        id={id}
        name={name}
        rows={plain ? 2 : 3}
        spellCheck={plain}
        className={plain ? undefined : "mono"}
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
      />
      {error && (
        <p className="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}
