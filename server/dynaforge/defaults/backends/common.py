"""What the core's model backends share: import paths, a tokenizer-free length estimate, config checks."""

from __future__ import annotations

import importlib
from typing import Any


def import_object(path: str) -> Any:
    """Import ``package.module:attribute`` (or ``package.module.attribute``)."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path of the form package.module:attribute")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def estimate_tokens(texts: list[Any]) -> int:
    """A tokenizer-free token count: about four characters per token, plus a few special tokens."""
    return sum(len(t) for t in texts if isinstance(t, str)) // 4 + 3


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def unknown_keys(config: dict[str, Any], known: set[str]) -> list[str]:
    unknown = sorted(set(config) - known)
    return (
        [f"unknown config key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}"] if unknown else []
    )
