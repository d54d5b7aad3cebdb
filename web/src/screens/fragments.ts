import { graphql } from "../gql";

/** Everything a form needs to know of a task's field. */
export const TaskFieldParts = graphql(`
  fragment TaskFieldParts on TaskField {
    name
    role
    type
    description
    required
    choices
    minLength
    maxLength
    minimum
    maximum
    integer
    contextField
    maxReferences
  }
`);
