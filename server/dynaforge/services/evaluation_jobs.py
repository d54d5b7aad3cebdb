"""Handing queued evaluations to the job system, for every service that queues them (submissions, data sets)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from dynaforge.services.platform import Platform

log = logging.getLogger(__name__)


def enqueue(p: Platform, evaluation_ids: Sequence[int] | Sequence[Sequence[int]]) -> None:
    """Send the evaluations to the job system, if this process runs one: a flat list as one job (one model's sets:
    the model is loaded once for all of them), a list of groups (one per model) as a job each. A broker that is
    down is logged, not raised: the submission is stored, and queued evaluations are sent again when a server
    starts."""
    if p.jobs is None or not evaluation_ids:
        return
    try:
        p.jobs.enqueue(evaluation_ids)
    except Exception as exc:  # dynaforge.jobs.BrokerUnavailable
        log.error("evaluations %s stay queued: %s", evaluation_ids, exc)
