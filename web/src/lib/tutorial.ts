// Whether a page shows the task's tutorial in place of its work: decided once, when the person's standing first
// arrives, so that passing does not swap the page before they read the result ("Start" does).
import { useEffect, useState } from "react";
import { useQuery } from "urql";
import { graphql } from "../gql";

const TutorialGate = graphql(`
  query TutorialGate($code: String!) {
    task(code: $code) {
      id
      tutorial {
        required
      }
    }
  }
`);

/** [whether the tutorial stands in for the page's work, the way to leave it once passed]. */
export function useTutorialGate(code: string, signedIn: boolean): [boolean, () => void] {
  const [{ data }] = useQuery({ query: TutorialGate, variables: { code }, pause: !signedIn });
  const required = data?.task?.tutorial?.required;
  const [practising, setPractising] = useState<boolean | null>(null);
  useEffect(() => {
    if (practising === null && required !== undefined) setPractising(required);
  }, [practising, required]);
  return [practising === true, () => setPractising(false)];
}
