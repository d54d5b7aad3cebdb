"""Dynaforge task plugin: binary hate speech (hateful / not hateful) with an offline MiniLM target model."""
