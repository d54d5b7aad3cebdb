"""Every hook a Dynaforge plugin can implement, one docstring each.

Registration hooks receive a ``register`` callback and call it once per object they contribute. Event hooks are
called after the change they announce has been committed; an exception in one is logged and never undoes the change.
Any implementation may be a plain function or a coroutine function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("dynaforge")
hookimpl = pluggy.HookimplMarker("dynaforge")


# --------------------------------------------------------------------------- registration


@hookspec
def register_tasks(register: Callable[[Any], None]) -> None:
    """Register tasks: call ``register(task)`` with an instance of a :class:`dynaforge.Task` subclass.

    A task's ``code`` must be unique across all plugins; a second task with the same code is refused and reported
    against the plugin that registered it.
    """


@hookspec
def register_model_backends(register: Callable[[Any], None]) -> None:
    """Register model backends: call ``register(backend)`` with a :class:`dynaforge.ModelBackend` instance.

    A backend turns a model configuration (``ModelSpec.config``) into a predictor. Its ``name`` is what a round's
    target model or a submission names in ``backend``.
    """


@hookspec
def register_metrics(register: Callable[[Any], None]) -> None:
    """Register metrics: call ``register(metric)`` with a :class:`dynaforge.Metric`.

    Tasks name the metrics they use in ``Task.metrics``; the name must be registered by some plugin.
    """


@hookspec
def register_perturbations(register: Callable[[Any], None]) -> None:
    """Register perturbations: call ``register(perturbation)`` with a :class:`dynaforge.Perturbation`.

    A perturbation transforms a text with a seeded ``random.Random``; tasks name the ones that fit them.
    """


@hookspec
def register_fairness_slices(register: Callable[[Any], None]) -> None:
    """Register fairness slices: call ``register(slice)`` with a :class:`dynaforge.Slice`.

    A slice assigns an example to a group from its fields; metrics are reported per group.
    """


@hookspec
def register_importers(register: Callable[[Any], None]) -> None:
    """Register importers of existing data sets: call ``register(importer)`` with a :class:`dynaforge.Importer`.

    An importer reads one file format into examples of one task (or of any task when its ``task_code`` is None);
    its ``name`` is what ``dynaforge import --format`` names and must be unique across plugins.
    """


# --------------------------------------------------------------------------- events


@hookspec
def example_created(example: dict[str, Any]) -> None:
    """Called after an example has been stored, whether or not it fooled the model.

    ``example`` is a plain dict of JSON values: ``id``, ``task_code``, ``task_id``, ``round`` (its number),
    ``round_id``, ``user_id``, ``context_id``, ``fields``, ``prediction``, ``model_predictions``, ``fooled`` (None
    while the prediction is pending), ``status``, ``tag``, ``time_taken_ms``, ``votes`` (correct, incorrect,
    flagged) and ``created_at`` (ISO 8601).
    """


@hookspec
def model_fooled(example: dict[str, Any]) -> None:
    """Called after a stored example fooled the target model; ``example`` is as in :func:`example_created`."""
