"""The core's model backends, one module each, each a default plugin registering its backend:

* :mod:`~dynaforge.defaults.backends.python`: ``python``, a model given by an import path;
* :mod:`~dynaforge.defaults.backends.transformers`: ``transformers``, sequence classification and extractive
  question answering from a model folder;
* :mod:`~dynaforge.defaults.backends.http`: ``http``, a remote model server (docs/model-server.md);
* :mod:`~dynaforge.defaults.backends.openai`: ``openai``, a model that writes, behind an OpenAI-compatible chat or
  completions API;
* :mod:`~dynaforge.defaults.backends.kserve`: ``kserve``, a model on an Open Inference Protocol (KServe v2) server.

What they share is in :mod:`~dynaforge.defaults.backends.common`. Registering them imports neither torch,
transformers nor httpx: each is imported where a model loads. Every predictor has a cheap ``length(model_input)``
estimate that the model worker groups requests by. The names below are re-exported for code that imports them
from here.
"""

from dynaforge.defaults.backends.common import estimate_tokens, import_object
from dynaforge.defaults.backends.http import HttpBackend, HttpPredictor
from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.defaults.backends.transformers import (
    TransformersBackend,
    TransformersClassifier,
    TransformersQuestionAnswerer,
    best_spans,
)

#: The plugin modules, in registration order (listed in ``dynaforge.plugins.DEFAULT_PLUGINS``).
MODULES = (
    "dynaforge.defaults.backends.python",
    "dynaforge.defaults.backends.transformers",
    "dynaforge.defaults.backends.http",
    "dynaforge.defaults.backends.openai",
    "dynaforge.defaults.backends.kserve",
)

__all__ = [
    "MODULES",
    "HttpBackend",
    "HttpPredictor",
    "PythonBackend",
    "TransformersBackend",
    "TransformersClassifier",
    "TransformersQuestionAnswerer",
    "best_spans",
    "estimate_tokens",
    "import_object",
]
