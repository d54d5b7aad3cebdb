"""The per-task lists of ``Task`` (``task(code:) { examples ... }``), implemented where their types live.

``Task`` lists a task's examples, models, data sets, leaderboard and more, but the modules that define those types
(and resolve them) refer back to ``Task`` (a model's task, a data set's task...). So that ``api/types/task.py``
imports none of them, each feature module registers the function behind its list here with :func:`task_list`, and
``Task`` looks it up by name with :func:`implementation` when the field is asked: the schema imports every feature
module before it serves (``api/schema.py``), and a lookup before that is a programming error, said so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_LISTS: dict[str, Callable[..., Awaitable[Any]]] = {}


def task_list(name: str) -> Callable[[F], F]:
    """Register the function behind ``Task.<name>``: it takes ``(info, task_code, ...)``, the field's arguments
    after the task's code, in the field's order."""

    def register(function: F) -> F:
        if name in _LISTS and _LISTS[name] is not function:
            raise RuntimeError(f"two implementations of Task.{name}: {_LISTS[name]} and {function}")
        _LISTS[name] = function
        return function

    return register


def implementation(name: str) -> Callable[..., Awaitable[Any]]:
    """The function registered for ``Task.<name>``."""
    try:
        return _LISTS[name]
    except KeyError:
        raise RuntimeError(
            f"Task.{name} has no implementation: its feature module was not imported (build the schema with "
            "dynaforge.api.schema.build_schema)"
        ) from None
