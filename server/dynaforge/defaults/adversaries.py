"""The built-in machine adversaries, usable by any text task (see :mod:`dynaforge.adversaries.base`).

- ``perturbation-search``: greedy composition of the task's registered robustness perturbations, guided by the
  target's probabilities (word importance by deletion, then substitutions), keeping the draft's gold;
- ``embedding-swap``: word substitutions from the nearest neighbours of the shipped MiniLM encoder's vocabulary,
  above a similarity floor, keeping the draft's gold;
- ``llm``: a chat model behind an OpenAI-compatible endpoint writes candidates from the instructions, the context
  and examples that fooled the target before; off until ``DYNAFORGE_LLM_ADVERSARY_URL`` is set, and subject to the
  outbound policy.
"""

from __future__ import annotations

from dynaforge.adversaries.embedding import EmbeddingSwap
from dynaforge.adversaries.llm import LLMAdversary
from dynaforge.adversaries.search import PerturbationSearch
from dynaforge.hookspecs import hookimpl


@hookimpl
def register_adversaries(register):
    register(PerturbationSearch())
    register(EmbeddingSwap())
    register(LLMAdversary())
