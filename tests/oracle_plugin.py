"""A test-only plugin for the scoring-oracle and honest-board tests: the toy task's fields and model under the codes
``oracle`` (two robustness perturbations, so that its scoring sets get copies that share their original's gold) and
``honest`` (a robustness and a fairness perturbation, so that its board has both axes)."""

from __future__ import annotations

from toy_plugin import ToyTask

from dynaforge import hookimpl


class OracleTask(ToyTask):
    code = "oracle"
    name = "Oracle"
    perturbations = ("lowercase", "uppercase")
    training_recipes = ()


class HonestTask(ToyTask):
    code = "honest"
    name = "Honest"
    perturbations = ("lowercase", "gender_swap")
    training_recipes = ()


class OraclePlugin:
    __name__ = "oracle_plugin"

    @hookimpl
    def register_tasks(self, register):
        register(OracleTask())
        register(HonestTask())


PLUGIN = OraclePlugin()  # the entry point ``oracle = oracle_plugin:PLUGIN`` of the processes the tests start
