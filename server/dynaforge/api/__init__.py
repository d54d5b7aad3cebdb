"""The GraphQL API: translates GraphQL to service calls and back; no SQL and no rule lives here."""
