"""Machine adversaries: the contract (:mod:`dynaforge.adversaries.base`) and the built-in adversaries."""

from dynaforge.adversaries.base import (
    SOURCES,
    Adversary,
    AdversaryFailed,
    AttackRequest,
    AttackStopped,
    Candidate,
    Oracle,
    Verdict,
    claimed_gold,
    fooling,
    gold_probability,
    text_input_fields,
)

__all__ = [
    "SOURCES",
    "Adversary",
    "AdversaryFailed",
    "AttackRequest",
    "AttackStopped",
    "Candidate",
    "Oracle",
    "Verdict",
    "claimed_gold",
    "fooling",
    "gold_probability",
    "text_input_fields",
]
