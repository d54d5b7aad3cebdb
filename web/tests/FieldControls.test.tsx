import { fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import type { FieldDescriptor, FormValues } from "../src/lib/fields";
import { FieldControls } from "../src/screens/FieldControls";

const fields: FieldDescriptor[] = [
  { name: "hypothesis", role: "INPUT", type: "TEXT", description: "Your sentence.", required: true, maxLength: 300 },
  { name: "label", role: "TARGET", type: "CHOICE", description: "", required: true, choices: null },
  { name: "rating", role: "METADATA", type: "NUMBER", description: "", required: false, minimum: 1, maximum: 5 },
  { name: "certain", role: "METADATA", type: "BOOLEAN", description: "", required: false },
  { name: "answer", role: "TARGET", type: "SPAN", description: "", required: true, contextField: "passage" },
];

function Harness({ onValues }: { onValues: (v: FormValues) => void }) {
  const [values, setValues] = useState<FormValues>({});
  return (
    <FieldControls
      fields={fields}
      labels={["entailment", "neutral", "contradiction"]}
      values={values}
      errors={{ hypothesis: "Hypothesis is required." }}
      context={{ passage: "Boats went through 23 locks." }}
      onChange={(name, value) =>
        setValues((v) => {
          const next = { ...v, [name]: value };
          onValues(next);
          return next;
        })
      }
    />
  );
}

describe("the controls of a task's fields", () => {
  it("label every control with the field's title and choices with the choice", () => {
    let values: FormValues = {};
    render(<Harness onValues={(v) => (values = v)} />);
    const hypothesis = screen.getByLabelText("Hypothesis");
    expect(hypothesis.tagName).toBe("TEXTAREA");
    expect(hypothesis.getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByText("Hypothesis is required.").id).toBe(
      hypothesis.getAttribute("aria-describedby")?.split(" ")[1],
    );
    fireEvent.click(screen.getByRole("radio", { name: "neutral" }));
    fireEvent.change(screen.getByLabelText("Rating"), { target: { value: "4" } });
    fireEvent.click(screen.getByRole("checkbox", { name: "Certain" }));
    fireEvent.change(screen.getByLabelText("Answer"), { target: { value: "23 locks" } });
    expect(values).toEqual({
      label: "neutral",
      rating: "4",
      certain: true,
      answer: { text: "23 locks", start: 19 },
    });
    expect(screen.getByRole("group", { name: "Label" })).toBeTruthy();
  });
});
