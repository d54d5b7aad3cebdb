"""Target-model runtime: backends and the inference client."""
