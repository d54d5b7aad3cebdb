// A task's model registry as the owner pages show it: what every entry is (the fragment that Rounds and Retraining
// ask for), and its weights digest in short.
import { graphql } from "../../gql";
import { shortDigest } from "../../lib/retraining";

export const RegisteredModelParts = graphql(`
  fragment RegisteredModelParts on RegisteredModel {
    id
    name
    backend
    weights
    origin
    recipe
    parameters {
      name
      boolean
      integer
      number
      string
    }
    seed
    trainingData {
      datasets {
        name
        size
      }
      examples
      baseData
    }
    metrics {
      name
      value
      text
    }
    createdAt
    model {
      id
    }
    rounds
    parent {
      id
      name
      origin
      weights
    }
  }
`);

/** A weights digest in short (the whole one on hover and for screen readers' descriptions). */
export function Digest({ weights }: { weights: string | null | undefined }) {
  const short = shortDigest(weights);
  if (!short) return <span className="muted">no stored weights</span>;
  return (
    <code className="digest" title={weights ?? undefined}>
      {short}
    </code>
  );
}
