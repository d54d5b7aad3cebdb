"""Dynaforge's extractive question answering task (``qa``) and its offline MiniLM span model."""
