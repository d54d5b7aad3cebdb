// The form controls of a task's fields, chosen by each descriptor's type. Shared by annotation (a new example)
// and validation (a corrected target).
import { useId } from "react";
import {
  choicesOf,
  type FieldDescriptor,
  type FormValue,
  type FormValues,
  fieldTitle,
  type Span,
  spanOfText,
} from "../lib/fields";

interface ControlsProps {
  fields: readonly FieldDescriptor[];
  labels: readonly string[];
  values: FormValues;
  errors: Record<string, string>;
  /** The context's fields, for spans typed instead of selected. */
  context: Record<string, unknown>;
  onChange: (name: string, value: FormValue) => void;
}

export function FieldControls({ fields, labels, values, errors, context, onChange }: ControlsProps) {
  return (
    <>
      {fields.map((field) => (
        <FieldControl
          key={field.name}
          field={field}
          labels={labels}
          value={values[field.name]}
          error={errors[field.name]}
          context={context}
          onChange={(value) => onChange(field.name, value)}
        />
      ))}
    </>
  );
}

function FieldControl({
  field,
  labels,
  value,
  error,
  context,
  onChange,
}: {
  field: FieldDescriptor;
  labels: readonly string[];
  value: FormValue;
  error?: string;
  context: Record<string, unknown>;
  onChange: (value: FormValue) => void;
}) {
  const id = `f-${useId().replace(/:/g, "")}`;
  const title = fieldTitle(field.name);
  const hintId = field.description ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ") || undefined;
  const hint = field.description ? (
    <p className="hint" id={hintId}>
      {field.description}
      {field.required ? "" : " (optional)"}
    </p>
  ) : null;
  const problem = error ? (
    <p className="error" id={errorId}>
      {error}
    </p>
  ) : null;
  const invalid = error ? true : undefined;

  if (field.type === "CHOICE") {
    const choices = choicesOf(field, labels);
    return (
      <fieldset className="control" aria-describedby={describedBy} aria-invalid={invalid}>
        <legend>{title}</legend>
        {hint}
        <div className="choices">
          {choices.map((choice, i) => (
            <label key={choice} className="choice" data-value={choice}>
              <input
                type="radio"
                name={field.name}
                value={choice}
                checked={value === choice}
                required={field.required}
                onChange={() => onChange(choice)}
              />
              {field.choiceTitles?.[field.choices?.indexOf(choice) ?? -1] ?? choice}
              {i < 9 && (
                <span className="key" aria-hidden="true">
                  {i + 1}
                </span>
              )}
            </label>
          ))}
        </div>
        {problem}
      </fieldset>
    );
  }
  if (field.type === "BOOLEAN") {
    return (
      <div className="control">
        <label className="choice">
          <input
            id={id}
            type="checkbox"
            checked={value === true}
            aria-describedby={describedBy}
            onChange={(e) => onChange(e.currentTarget.checked)}
          />
          {title}
        </label>
        {hint}
        {problem}
      </div>
    );
  }
  let control: React.ReactNode;
  if (field.type === "NUMBER") {
    control = (
      <input
        id={id}
        type="number"
        inputMode={field.integer ? "numeric" : "decimal"}
        step={field.integer ? 1 : "any"}
        min={field.minimum ?? undefined}
        max={field.maximum ?? undefined}
        required={field.required}
        value={typeof value === "string" ? value : ""}
        aria-describedby={describedBy}
        aria-invalid={invalid}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    );
  } else if (field.type === "SPAN") {
    const span = typeof value === "object" ? (value as Span) : undefined;
    const source = String(context[field.contextField ?? ""] ?? "");
    control = (
      <input
        id={id}
        type="text"
        className="span-input"
        required={field.required}
        value={span ? span.text : typeof value === "string" ? value : ""}
        aria-describedby={describedBy}
        aria-invalid={invalid}
        placeholder={`Select it in the ${fieldTitle(field.contextField ?? "context").toLowerCase()}, or type it`}
        onChange={(e) => {
          const typed = e.currentTarget.value;
          onChange(spanOfText(source, typed) ?? typed);
        }}
      />
    );
  } else if (field.type === "TEXT" && field.maxLength != null && field.maxLength <= 100) {
    control = (
      <input
        id={id}
        type="text"
        required={field.required}
        maxLength={field.maxLength}
        value={typeof value === "string" ? value : ""}
        aria-describedby={describedBy}
        aria-invalid={invalid}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    );
  } else {
    control = (
      <textarea
        id={id}
        rows={field.role === "METADATA" ? 2 : 3}
        required={field.required}
        maxLength={field.type === "TEXT" ? (field.maxLength ?? undefined) : undefined}
        placeholder={
          field.type === "REFERENCES"
            ? `One reference per line (at most ${field.maxReferences ?? 1}); any of them counts as right`
            : undefined
        }
        value={typeof value === "string" ? value : ""}
        aria-describedby={describedBy}
        aria-invalid={invalid}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    );
  }
  return (
    <div className="control">
      <label htmlFor={id}>{title}</label>
      {hint}
      {control}
      {problem}
    </div>
  );
}
