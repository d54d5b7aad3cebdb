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
    choiceTitles
    minLength
    maxLength
    minimum
    maximum
    integer
    contextField
    maxReferences
  }
`);

/** Revoke an API token (one's own, or anyone's for admins): the Me page and the admin page. */
export const RevokeToken = graphql(`
  mutation RevokeToken($input: RevokeApiTokenInput!) {
    revokeApiToken(input: $input) {
      __typename
      ... on ApiTokenRevoked {
        apiToken {
          id
          revoked
        }
      }
      ... on Error {
        message
      }
    }
  }
`);
