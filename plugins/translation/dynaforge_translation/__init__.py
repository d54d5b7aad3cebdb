"""Dynaforge task plugin: French to English translation judged by chrF against references."""
