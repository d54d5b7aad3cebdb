"""What the client returns for results and leaderboards: plain objects over the generated models, with
``to_pandas()`` when pandas is installed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._generated.fragments import EvaluationFields, ModelFields
from ._generated.leaderboard import LeaderboardTaskLeaderboard, LeaderboardTaskLeaderboardRows


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install 'dynaforge-client[pandas]'") from None
    return pandas


@dataclass(frozen=True)
class ModelResults:
    """A model and its evaluations: one per scoring data set, with metrics (and their confidence intervals), fairness
    slices and perturbations. ``done`` is true once the model is DONE or FAILED."""

    model: ModelFields
    evaluations: list[EvaluationFields]

    @property
    def done(self) -> bool:
        """The model is DONE or FAILED: every evaluation has ended and the server has added what it derives from
        them (robustness and fairness from the perturbed copies), which it does after the last one ends."""
        return self.model.status.value in ("DONE", "FAILED") and all(
            e.status.value in ("DONE", "FAILED") for e in self.evaluations
        )

    @property
    def failed(self) -> list[EvaluationFields]:
        return [e for e in self.evaluations if e.status.value == "FAILED"]

    def metrics(self) -> dict[str, dict[str, float]]:
        """``{data set name: {metric: value}}`` for the evaluations that are DONE."""
        return {
            e.dataset.name: {m.name: m.value for m in e.metrics} for e in self.evaluations if e.status.value == "DONE"
        }

    def records(self) -> list[dict[str, Any]]:
        """One row per data set and metric: data set, metric, value, interval (low, high), throughput, memory."""
        rows = []
        for e in self.evaluations:
            for m in e.metrics:
                rows.append(
                    {
                        "dataset": e.dataset.name,
                        "metric": m.name,
                        "value": m.value,
                        "low": m.interval.low if m.interval else None,
                        "high": m.interval.high if m.interval else None,
                        "throughput": e.throughput,
                        "memory_gib": e.memory_gib,
                    }
                )
        return rows

    def to_pandas(self) -> Any:
        """:meth:`records` as a pandas DataFrame."""
        return _pandas().DataFrame(self.records())


@dataclass(frozen=True)
class Leaderboard:
    """A task's leaderboard under the weights asked for: ``rows`` ranked by Dynascore (or by one metric)."""

    board: LeaderboardTaskLeaderboard

    @property
    def rows(self) -> list[LeaderboardTaskLeaderboardRows]:
        return list(self.board.rows)

    @property
    def metric_weights(self) -> dict[str, float]:
        """The weights the ranking used, normalised by the server (their ratios are the ones asked for)."""
        return {w.name: w.weight for w in self.board.metric_weights}

    @property
    def datasets(self) -> list[str]:
        """The scoring data sets the Dynascore averages over."""
        return list(self.board.datasets)

    def records(self) -> list[dict[str, Any]]:
        """One row per model: rank (None: not ranked, see ``missing``), model id and name, submitter, Dynascore, the
        metrics it lacks results for, then each metric's value."""
        out = []
        for row in self.board.rows:
            record: dict[str, Any] = {
                "rank": row.rank,
                "model_id": row.model.model_id,
                "model": row.model.name,
                "submitter": row.model.submitter.username if row.model.submitter else None,
                "dynascore": row.dynascore,
                "missing": list(row.missing),
            }
            for metric in row.metrics:
                record[metric.name] = metric.value
            out.append(record)
        return out

    def to_pandas(self) -> Any:
        """:meth:`records` as a pandas DataFrame indexed by rank."""
        frame = _pandas().DataFrame(self.records())
        return frame.set_index("rank") if not frame.empty else frame

    def __len__(self) -> int:
        return len(self.board.rows)
