"""Dynaforge task plugin: natural language inference with an offline MiniLM target model."""
