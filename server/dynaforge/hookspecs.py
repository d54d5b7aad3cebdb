"""Every hook a Dynaforge plugin can implement, one docstring each.

Registration hooks receive a ``register`` callback and call it once per object they contribute. Event hooks are
called after the change they announce has been committed; an exception in one is logged and never undoes the change.
Any implementation may be a plain function or a coroutine function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # the contract's types, for plugin authors' type checkers (no import cycle at run time)
    from dynaforge.adversaries.base import Adversary
    from dynaforge.crowd import CrowdPlatform
    from dynaforge.exporters import ExportFormat
    from dynaforge.importers import Importer
    from dynaforge.inference.backends import ModelBackend
    from dynaforge.tasks.base import Metric, Perturbation, Slice, Task

hookspec = pluggy.HookspecMarker("dynaforge")
hookimpl = pluggy.HookimplMarker("dynaforge")


# --------------------------------------------------------------------------- registration


@hookspec
def register_tasks(register: Callable[[Task], None]) -> None:
    """Register tasks: call ``register(task)`` with an instance of a :class:`dynaforge.Task` subclass.

    A task's ``code`` must be unique across all plugins; a second task with the same code is refused and reported
    against the plugin that registered it.
    """


@hookspec
def register_model_backends(register: Callable[[ModelBackend], None]) -> None:
    """Register model backends: call ``register(backend)`` with a :class:`dynaforge.ModelBackend` instance.

    A backend turns a model configuration (``ModelSpec.config``) into a predictor. Its ``name`` is what a round's
    target model or a submission names in ``backend``.
    """


@hookspec
def register_metrics(register: Callable[[Metric], None]) -> None:
    """Register metrics: call ``register(metric)`` with a :class:`dynaforge.Metric`.

    Tasks name the metrics they use in ``Task.metrics``; the name must be registered by some plugin.
    """


@hookspec
def register_perturbations(register: Callable[[Perturbation], None]) -> None:
    """Register perturbations: call ``register(perturbation)`` with a :class:`dynaforge.Perturbation`.

    A perturbation transforms a text with a seeded ``random.Random``; tasks name the ones that fit them.
    """


@hookspec
def register_fairness_slices(register: Callable[[Slice], None]) -> None:
    """Register fairness slices: call ``register(slice)`` with a :class:`dynaforge.Slice`.

    A slice assigns an example to a group from its fields; metrics are reported per group.
    """


@hookspec
def register_importers(register: Callable[[Importer], None]) -> None:
    """Register importers of existing data sets: call ``register(importer)`` with a :class:`dynaforge.Importer`.

    An importer reads one file format into examples of one task (or of any task when its ``task_code`` is None);
    its ``name`` is what ``dynaforge import --format`` names and must be unique across plugins.
    """


@hookspec
def register_export_formats(register: Callable[[ExportFormat], None]) -> None:
    """Register export formats: call ``register(format)`` with a :class:`dynaforge.ExportFormat` instance.

    A format writes a task's collected examples, handed to it page by page as ``dynaforge.example/2`` records; its
    ``name`` is what ``dynaforge export --format`` and ``GET /export/{task}?format=`` name and must be unique across
    plugins. The core registers ``jsonl`` and ``hf``.
    """


@hookspec
def register_adversaries(register: Callable[[Adversary], None]) -> None:
    """Register machine adversaries: call ``register(adversary)`` with a :class:`dynaforge.Adversary` instance.

    An adversary proposes examples meant to fool a round's target model, from a context and optionally an
    annotator's draft, with budgeted black-box access to the target (:mod:`dynaforge.adversaries.base`). Its ``name``
    is what ``suggestEdits`` and ``generateCandidates`` name and must be unique across plugins. The core registers
    ``perturbation-search``, ``embedding-swap`` and ``llm``; a task plugin may register templates of its own
    (:class:`dynaforge.adversaries.templates.TemplateAdversary`).
    """


@hookspec
def register_crowd_platforms(register: Callable[[CrowdPlatform], None]) -> None:
    """Register crowd platforms: call ``register(platform)`` with a :class:`dynaforge.CrowdPlatform` instance.

    A crowd platform turns its study links into pseudonymous participants, sends them back with a completion code
    and pays their bonuses (:mod:`dynaforge.crowd`). Its ``name`` is what ``/crowd/<name>/<study>`` and
    ``createCrowdStudy`` name and must be unique across plugins. The core registers ``prolific``.
    """


# --------------------------------------------------------------------------- events


@hookspec
def example_created(example: dict[str, Any]) -> None:
    """Called after an example has been stored, whether or not it fooled the model.

    ``example`` is a plain dict of JSON values: ``id``, ``task_code``, ``task_id``, ``round`` (its number),
    ``round_id``, ``user_id``, ``context_id``, ``fields``, ``prediction``, ``model_predictions``, ``fooled`` (None
    while the prediction is pending), ``status``, ``tag``, ``time_taken_ms``, ``source`` (``HUMAN``, ``ASSISTED``
    or ``MACHINE``), ``adversary`` (the adversary behind an assisted or machine example, else None), ``verdict``
    (who decides ``fooled`` when a judge or people do, else None), ``votes`` (correct, incorrect, flagged) and
    ``created_at`` (ISO 8601). ``fooled`` is None too while a judge's or the validators' verdict is waited for.
    """


@hookspec
def example_predicted(example: dict[str, Any]) -> None:
    """Called after an example stored while its prediction was pending got it (fooled or not); ``example`` is as in
    :func:`example_created`, with its ``prediction`` and ``fooled``. :func:`model_fooled` follows when it fooled."""


@hookspec
def verdict_decided(example: dict[str, Any]) -> None:
    """Called after whether an example fooled the model was decided, when its task's judge model or its validators
    decide (``verdict`` ``judge`` or ``people``), or an owner overruled the judge. ``example`` is as in
    :func:`example_created`, with ``fooled`` and ``verdict`` (``by``: ``judge`` or ``people``, the judge's
    ``rationale``, an ``overruled`` entry). :func:`model_fooled` follows when it fooled the model."""


@hookspec
def model_fooled(example: dict[str, Any]) -> None:
    """Called after a stored example fooled the target model; ``example`` is as in :func:`example_created`."""


@hookspec
def example_validated(example: dict[str, Any], validation: dict[str, Any]) -> None:
    """Called after a vote on an example, or a flag, has been stored.

    ``example`` is as in :func:`example_created`, as it is after the vote: its ``status`` is ``ACCEPTED`` or
    ``REJECTED`` when this vote decided it, ``FLAGGED`` after a flag, and ``votes`` counts this vote.
    ``validation`` is a plain dict of JSON values: ``example_id``, ``label`` (``CORRECT``, ``INCORRECT`` or
    ``FLAGGED``), ``user_id`` (who voted or flagged; the example's own ``user_id`` when its author flagged it, which
    is no vote), ``by_owner`` (an owner's or admin's vote, which decides alone), ``reason`` (or None),
    ``corrected_target`` (the validator's corrected target fields, or None) and ``at`` (ISO 8601).
    """


@hookspec
def round_changed(round: dict[str, Any], change: str) -> None:
    """Called after a round of a task has been opened, closed or edited.

    ``change`` is ``OPENED``, ``CLOSED`` or ``UPDATED`` (its description). ``round`` is a plain dict of JSON values:
    ``id``, ``task_code``, ``task_id``, ``number``, ``description``, ``target_models`` (each a dict with ``name``,
    ``backend`` and ``config``), ``ensemble_rule``, ``started_at`` and ``ended_at`` (ISO 8601; ``ended_at`` is None
    while the round is open). Opening a round closes the previous one without a separate ``CLOSED`` call.
    """


@hookspec
def evaluation_finished(evaluation: dict[str, Any]) -> None:
    """Called after an evaluation (a model on one data set) has been recorded as ``DONE`` or ``FAILED``.

    Called once per finished run, by the process that recorded it: the evaluation job's own child process for a
    submitted model (so a worker process, not the API's, wherever jobs run), the job's worker when the child ran past
    its time limit, and the API process for uploaded predictions. That process loads the same plugins as the server
    (``DYNAFORGE_LOAD_PLUGINS``). ``evaluation`` is a plain dict of JSON values: ``id``, ``task_code``,
    ``model_id``, ``dataset_id``, ``dataset_name``, ``status`` (``DONE`` or ``FAILED``), ``metrics`` (metric name
    to value; empty when failed), ``throughput`` (items per second, or None), ``memory_mb`` (or None), ``error``
    (None when done), ``attempts``, ``started_at`` and ``finished_at`` (ISO 8601).
    """
