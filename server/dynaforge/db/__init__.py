"""Storage: SQLModel tables, the async engine and sessions. No business rules live here."""
