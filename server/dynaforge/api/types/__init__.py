"""GraphQL object types, one module each; each keeps its row as ``strawberry.Private``."""
