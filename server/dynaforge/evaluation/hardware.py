"""What machine an evaluation ran on, recorded with its figures: throughput and memory mean little without it.

Only facts that describe the hardware are kept (processor model, logical cores, memory, accelerator); nothing that
names or locates the machine (no host name, no address).
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _accelerator() -> str | None:
    """The CUDA device's name when torch is already loaded in this process and sees one; None otherwise (torch is
    not imported here just to ask)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
    except Exception:  # a broken driver must not fail the evaluation that reports it
        return None
    return None


@functools.cache
def _machine() -> dict[str, Any]:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gb": _memory_gb(), "machine": platform.machine()}


def hardware() -> dict[str, Any]:
    """``{"cpu", "cores", "memory_gb", "machine", "accelerator"}`` of this process's machine; the accelerator is
    asked each time (torch may have been loaded since)."""
    return {**_machine(), "accelerator": _accelerator()}
