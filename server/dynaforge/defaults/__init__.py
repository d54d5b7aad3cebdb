"""Core defaults, registered as plugins before any installed plugin: metrics, model backends, perturbations."""
