"""Dynaforge task plugin: red-teaming an assistant model under a written policy."""
