"""Dynaforge task plugin: three-way sentiment with an offline MiniLM target model."""
