// Task field descriptors (Task.fields in the schema) turned into form controls and example fields. Nothing here
// names a task: every form is built from the descriptors the server publishes.
import type { FieldRole, FieldType } from "../gql/graphql";

export interface FieldDescriptor {
  name: string;
  role: FieldRole;
  type: FieldType;
  description: string;
  required: boolean;
  choices?: readonly string[] | null;
  /** How people read each of `choices` (the task's label titles), in the same order. */
  choiceTitles?: readonly string[] | null;
  minLength?: number | null;
  maxLength?: number | null;
  minimum?: number | null;
  maximum?: number | null;
  integer?: boolean | null;
  contextField?: string | null;
  maxReferences?: number | null;
}

/** A span of a context field: the text exactly as it stands at `start` (in characters, i.e. code points). */
export interface Span {
  text: string;
  start: number;
}

/** What a form control holds: text as typed (numbers included), a boolean, a span, or nothing yet. */
export type FormValue = string | boolean | Span | undefined;
export type FormValues = Record<string, FormValue>;

/** The label of a field's control: its name in words ("target_group" -> "Target group"). */
export function fieldTitle(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The choices a CHOICE field offers: its own, else the task's labels. */
export function choicesOf(field: FieldDescriptor, labels: readonly string[]): readonly string[] {
  return field.choices?.length ? field.choices : labels;
}

/** Every choice value's title, from the fields that have titles (the values themselves where none is given). */
export function choiceTitles(fields: readonly FieldDescriptor[]): Record<string, string> {
  const titles: Record<string, string> = {};
  for (const field of fields)
    (field.choices ?? []).forEach((value, i) => {
      const title = field.choiceTitles?.[i];
      if (title && !(value in titles)) titles[value] = title;
    });
  return titles;
}

/** How people read a label or choice value. */
export function titleOf(titles: Record<string, string>, value: string): string {
  return titles[value] ?? value;
}

/** The fields an annotator fills in (everything but the context), in the task's order. */
export function formFields(fields: readonly FieldDescriptor[]): FieldDescriptor[] {
  return fields.filter((f) => f.role !== "CONTEXT");
}

/** The character (code point) offset of a UTF-16 index into `text`: what the server counts spans in. */
export function codePointOffset(text: string, utf16Index: number): number {
  return Array.from(text.slice(0, utf16Index)).length;
}

/** The span that a selection from UTF-16 index `from` to `to` of `context` picks, without surrounding spaces; null
 * when it selects nothing but spaces. */
export function spanFromSelection(context: string, from: number, to: number): Span | null {
  let start = Math.min(from, to);
  let end = Math.max(from, to);
  while (start < end && /\s/.test(context.charAt(start))) start++;
  while (end > start && /\s/.test(context.charAt(end - 1))) end--;
  if (start >= end) return null;
  return { text: context.slice(start, end), start: codePointOffset(context, start) };
}

/** The span where `text` first occurs in `context` (for typing an answer instead of selecting it), or null. */
export function spanOfText(context: string, text: string): Span | null {
  const wanted = text.trim();
  if (!wanted) return null;
  const at = context.indexOf(wanted);
  return at < 0 ? null : { text: wanted, start: codePointOffset(context, at) };
}

function isSpan(value: FormValue): value is Span {
  return typeof value === "object" && value !== null && "start" in value;
}

/** The example's fields from the form, checked as the descriptors say; `errors` holds a sentence per field that
 * breaks a rule (the server checks again and has the last word). */
export function buildFields(
  fields: readonly FieldDescriptor[],
  values: FormValues,
  labels: readonly string[] = [],
): { fields: Record<string, unknown>; errors: Record<string, string> } {
  const out: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of formFields(fields)) {
    const title = fieldTitle(field.name);
    const value = values[field.name];
    const empty = value === undefined || (typeof value === "string" && value.trim() === "");
    if (empty && field.type !== "BOOLEAN") {
      if (field.required) errors[field.name] = `${title} is required.`;
      continue;
    }
    switch (field.type) {
      case "TEXT": {
        const text = String(value).trim();
        if (field.minLength != null && text.length < field.minLength)
          errors[field.name] = `${title} needs at least ${field.minLength} characters.`;
        else if (field.maxLength != null && text.length > field.maxLength)
          errors[field.name] = `${title} takes at most ${field.maxLength} characters.`;
        else out[field.name] = text;
        break;
      }
      case "REFERENCES": {
        // One reference per line: a list when there are several.
        const texts = String(value)
          .split("\n")
          .map((line) => line.trim())
          .filter((line) => line !== "");
        const max = field.maxReferences ?? 1;
        const short = texts.find((t) => field.minLength != null && t.length < field.minLength);
        const long = texts.find((t) => field.maxLength != null && t.length > field.maxLength);
        if (texts.length > max) errors[field.name] = `${title} takes at most ${max} references, one per line.`;
        else if (new Set(texts).size !== texts.length) errors[field.name] = `${title} lists a reference twice.`;
        else if (short !== undefined)
          errors[field.name] = `Each reference needs at least ${field.minLength} characters.`;
        else if (long !== undefined) errors[field.name] = `Each reference takes at most ${field.maxLength} characters.`;
        else out[field.name] = texts.length === 1 ? texts[0] : texts;
        break;
      }
      case "CHOICE": {
        const choices = choicesOf(field, labels);
        if (!choices.includes(String(value))) errors[field.name] = `Choose one of: ${choices.join(", ")}.`;
        else out[field.name] = String(value);
        break;
      }
      case "NUMBER": {
        const number = Number(String(value).trim());
        if (!Number.isFinite(number)) errors[field.name] = `${title} must be a number.`;
        else if (field.integer && !Number.isInteger(number)) errors[field.name] = `${title} must be a whole number.`;
        else if (field.minimum != null && number < field.minimum)
          errors[field.name] = `${title} must be at least ${field.minimum}.`;
        else if (field.maximum != null && number > field.maximum)
          errors[field.name] = `${title} must be at most ${field.maximum}.`;
        else out[field.name] = number;
        break;
      }
      case "BOOLEAN":
        if (value === undefined && field.required) errors[field.name] = `${title} is required.`;
        else if (value !== undefined) out[field.name] = value === true || value === "true";
        break;
      case "SPAN":
        if (!isSpan(value))
          errors[field.name] =
            `Select the ${title.toLowerCase()} in the ${fieldTitle(field.contextField ?? "context").toLowerCase()}.`;
        else if (field.maxLength != null && value.text.length > field.maxLength)
          errors[field.name] = `${title} takes at most ${field.maxLength} characters.`;
        else out[field.name] = { text: value.text, start: value.start };
        break;
      default: {
        // OTHER: a kind a plugin defines; the control takes JSON.
        try {
          out[field.name] = JSON.parse(String(value));
        } catch {
          errors[field.name] = `${title} must be JSON (see the field's description).`;
        }
      }
    }
  }
  return { fields: out, errors };
}

/** A field's value for display: text as is, spans by their text, references one per line, anything else as JSON. */
export function showValue(value: unknown): string {
  if (value == null) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join("\n");
  if (typeof value === "object" && "text" in (value as object)) return String((value as Span).text);
  return JSON.stringify(value);
}
