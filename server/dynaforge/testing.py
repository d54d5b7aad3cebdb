"""pytest support for task plugins: the conformance checks (:mod:`dynaforge.conformance`) as tests in the plugin's
own suite, one test per task and check, each failing with every problem it found.

.. code-block:: python

    from dynaforge.testing import parametrize_with_checks


    @parametrize_with_checks(["formality"])
    def test_formality_conforms(check):
        check()

The tasks must be installed (their entry point in ``dynaforge.plugins``), or their plugin module named with
``plugins=["dynaforge_formality.plugin"]``. This module is also a pytest plugin, loaded wherever Dynaforge is
installed: ``pytest --dynaforge-skip-models`` skips the checks that load and run models (the default target models,
a data selection recipe).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import pytest

from dynaforge import conformance
from dynaforge.plugins import Plugins

__all__ = ["TaskConformanceError", "ConformanceCheck", "parametrize_with_checks"]

F = TypeVar("F", bound=Callable[..., Any])
_SKIP_MODELS = False


class TaskConformanceError(AssertionError):
    """A conformance check found problems: the message lists every one."""


@cache
def _plugins(modules: tuple[str, ...]) -> Plugins:
    """One plugin manager per set of extra plugin modules, shared by the session's checks."""
    return Plugins(extra=[importlib.import_module(m) for m in modules])


@dataclass(frozen=True)
class ConformanceCheck:
    """One check on one task; calling it runs the check and raises :class:`TaskConformanceError` on problems."""

    task: str
    check: str
    plugins: tuple[str, ...] = ()

    def __call__(self) -> None:
        if _SKIP_MODELS and any(c.needs_models for c in conformance.CHECKS if c.name == self.check):
            pytest.skip("--dynaforge-skip-models")
        plugins = _plugins(self.plugins)
        if self.task not in plugins.registry.tasks:
            broken = "".join(f"\nplugin {name} is broken: {error}" for name, error in plugins.errors.items())
            raise TaskConformanceError(f"no task {self.task!r} is installed{broken}")
        [result] = conformance.run_checks_sync(plugins, [self.task], checks=[self.check])
        if result.skipped:
            pytest.skip(result.skipped)
        if result.problems:
            lines = "\n".join(f"  - {p}" for p in result.problems)
            raise TaskConformanceError(f"task {self.task}, check {self.check}:\n{lines}")

    def __str__(self) -> str:
        return f"{self.task}-{self.check}"


def parametrize_with_checks(tasks: Iterable[str], *, plugins: Sequence[str] = ()) -> Callable[[F], F]:
    """Parametrize a test with one :class:`ConformanceCheck` per task and check, as the argument ``check``; test
    ids read ``TASK-CHECK``. ``plugins``: plugin modules to load besides the installed entry points."""
    checks = [ConformanceCheck(task, c.name, tuple(plugins)) for task in tasks for c in conformance.CHECKS]
    return pytest.mark.parametrize("check", checks, ids=str)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynaforge")
    group.addoption(
        "--dynaforge-skip-models",
        action="store_true",
        default=False,
        help="Dynaforge conformance checks: skip those that load and run models (default targets, selection recipes).",
    )


def pytest_configure(config: pytest.Config) -> None:
    global _SKIP_MODELS
    _SKIP_MODELS = bool(config.getoption("--dynaforge-skip-models", default=False))
