// Why a rule with a threshold decided as it did (Example.verdictExplanation), in a sentence.

export interface Explanation {
  measure: string;
  score: number;
  threshold: number;
  fooledBelow: boolean;
}

/** A score as people read it: two decimals on a 0–1 scale, one on a larger one (chrF runs to 100). */
function shown(value: number, scale: number): string {
  return scale <= 1 ? value.toFixed(2) : value.toFixed(1);
}

/** "Word-overlap F1 of the model's answer with yours: 0.25, below the threshold of 0.40: the model is fooled." */
export function explainVerdict(e: Explanation): string {
  const scale = Math.max(Math.abs(e.threshold), 1);
  const below = e.score < e.threshold;
  const fooled = e.fooledBelow ? below : !below;
  const where = below ? "below" : e.score === e.threshold ? "at" : "above";
  const measure = e.measure.charAt(0).toUpperCase() + e.measure.slice(1);
  return `${measure}: ${shown(e.score, scale)}, ${where} the threshold of ${shown(e.threshold, scale)}: the model is ${
    fooled ? "fooled" : "not fooled"
  }.`;
}
