"""Model backends: how a model configuration becomes something that predicts.

A backend is registered by a plugin (the core's own are in ``dynaforge.defaults.backends``, one module each).
``load(config)`` returns a :class:`Predictor`; it may import heavy libraries (torch, transformers) because it only
runs where inference runs, never at API start-up.

A predictor that writes its output piece by piece (a language model streaming its reply) hands each piece to
:func:`emit_token` as it arrives; whoever asked for the prediction with a token sink (:func:`streaming_to`) receives
them, on the predicting thread, while the prediction runs. Without a sink, :func:`emit_token` does nothing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger(__name__)

#: Receives each piece of a streamed output, on the thread that predicts; set by :func:`streaming_to`.
TokenSink = Callable[[str], None]
_token_sink: ContextVar[TokenSink | None] = ContextVar("dynaforge_token_sink", default=None)


@contextlib.contextmanager
def streaming_to(sink: TokenSink | None) -> Iterator[None]:
    """Within the block, :func:`emit_token` on this thread hands its pieces to ``sink`` (nothing when None)."""
    token = _token_sink.set(sink)
    try:
        yield
    finally:
        _token_sink.reset(token)


#: Threads the inference process gives the models that only wait on the network (:func:`is_io_bound`).
REMOTE_THREADS = 8


def is_io_bound(model: Any) -> bool:
    """Whether a loaded model only waits on the network (a model server, an engine: ``io_bound = True`` on the
    predictor). The inference process runs those on a thread pool of their own, apart from the one thread that
    runs the models computing here, so that a slow remote model never queues the others behind it."""
    return bool(getattr(model, "io_bound", False))


def emit_token(text: str) -> None:
    """A predictor's piece of output as it is written (a streamed reply's delta): passed to the sink of the
    prediction that runs on this thread, if any. A failing sink is logged, never the prediction's failure."""
    sink = _token_sink.get()
    if sink is None or not text:
        return
    try:
        sink(text)
    except Exception:  # noqa: BLE001 - the stream is a courtesy; the prediction is what counts
        log.warning("a token sink failed", exc_info=True)


@runtime_checkable
class Predictor(Protocol):
    """A loaded model. ``predict`` receives a batch of model inputs and returns one raw output per input."""

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]: ...


class ModelBackend:
    """Base class of model backends. Subclasses set ``name`` and implement :meth:`load`."""

    name: str = ""
    description: str = ""
    #: JSON Schema (draft 2020-12) of the configuration, for forms and clients (the API lists it with the backend).
    #: ``check_config`` stays the authority: a schema cannot say everything (for example, which keys go together).
    config_schema: dict[str, Any] = {"type": "object"}

    def check_config(self, config: dict[str, Any]) -> list[str]:
        """Problems with a configuration, found without loading the model (empty when it looks right)."""
        return []

    def load(self, config: dict[str, Any]) -> Predictor:
        raise NotImplementedError

    def outbound_urls(self, config: dict[str, Any]) -> list[str]:
        """The URLs the server will call for this configuration (a model server's address): checked against the
        outbound policy when the model is submitted or set as a target, not only when it loads."""
        return []

    def needs_network(self, config: dict[str, Any]) -> bool:
        """Whether a model of this configuration calls out (a model server, a hub download). Evaluations run the
        others in a process without network (where the kernel allows it); the default, True, is the safe answer for
        a backend that does not say."""
        return True

    def artifacts(self, config: dict[str, Any]) -> list[str]:
        """The uploaded model artifacts (digests in the model store) this configuration loads: each must be stored
        when the model is submitted or set as a target, so a configuration cannot point anywhere else."""
        return []

    def admin_only(self, config: dict[str, Any]) -> str | None:
        """Why this configuration is for admins only (it reads the server's own files, say), or None when anyone
        the backend is open to may use it. Checked for model submissions and a task's target models."""
        return None

    def __repr__(self) -> str:
        return f"<ModelBackend {self.name}>"


class InferenceError(Exception):
    """The model could not produce a prediction (bad output, backend failure)."""


class InferenceTimeout(InferenceError):
    """The model did not answer within the configured time; the example waits for a later prediction."""


class UnusableOutput(InferenceError):
    """The model answered, but the task could not read the answer (a label outside the task's set, a missing target
    field): asking the same model again about the same input gives the same answer, so retries are bounded."""
