"""A test-only plugin for the scoring-oracle tests: the toy task's fields and model under the code ``oracle``, with
two perturbations, so that its scoring sets get perturbed copies (robustness) that share their original's gold."""

from __future__ import annotations

from toy_plugin import ToyTask

from dynaforge import hookimpl


class OracleTask(ToyTask):
    code = "oracle"
    name = "Oracle"
    perturbations = ("lowercase", "uppercase")
    training_recipes = ()


class OraclePlugin:
    __name__ = "oracle_plugin"

    @hookimpl
    def register_tasks(self, register):
        register(OracleTask())


PLUGIN = OraclePlugin()  # the entry point ``oracle = oracle_plugin:PLUGIN`` of the processes the tests start
