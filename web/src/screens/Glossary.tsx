// What the counters beside the work mean, in a few words: collected, fooled, verified, vMER and the gold label.
export function Glossary({ decidedBy = "RULE" }: { decidedBy?: string | null }) {
  const fooled =
    decidedBy === "JUDGE"
      ? "the task's judge model found the model's answer wrong"
      : decidedBy === "PEOPLE"
        ? "validators found the model's answer wrong"
        : "the model's answer differs from your gold (the answer you mark as right), by the task's rule";
  return (
    <details className="glossary small">
      <summary>What these mean</summary>
      <dl>
        <dt>Collected</dt>
        <dd>Examples the model answered in this round.</dd>
        <dt>Fooled</dt>
        <dd>Of those, the ones where {fooled}.</dd>
        <dt>Verified</dt>
        <dd>
          Fooling examples that validators then accepted (the gold is right and the example is fair): only these count
          on the boards and in training data.
        </dd>
        <dt>vMER</dt>
        <dd>Verified model error rate: verified ÷ collected. The higher it is, the weaker the model in this round.</dd>
      </dl>
    </details>
  );
}
