"""Arguments that a root field and its ``Task`` field both take, declared once.

The per-task lists live on ``Task`` (``task(code:) { examples(...) }``); the root fields that take a ``taskCode``
and answer the same are deprecated and share these declarations, so the two never drift apart.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from dynaforge.api.enums import AdversaryRunStatus, ExampleSource, ExampleStatus, LeaderboardSort, TrainingStatus


@strawberry.input(description="A weight for a metric or a data set of the leaderboard.")
class WeightInput:
    name: str = strawberry.field(
        description="A metric's name (one of the board's axes) or a scoring data set's name; each name at most once."
    )
    weight: float = strawberry.field(
        description="A finite number, 0 or more: only the ratios between weights matter. 0 shows the metric (or "
        "leaves the data set out) without counting it; at least one weight must be above 0."
    )


# --------------------------------------------------------------------------- examples
ExampleStatusFilter = Annotated[
    ExampleStatus | None, strawberry.argument(description="Only examples in this status; null: any.")
]
MineOnly = Annotated[
    bool, strawberry.argument(description="Only your own examples (what everyone but owners and admins gets).")
]
ExampleRound = Annotated[int | None, strawberry.argument(description="Only this round's examples (its number).")]
FooledFilter = Annotated[
    bool | None, strawberry.argument(description="Only examples that fooled the model (true) or did not (false).")
]
ExampleTag = Annotated[str | None, strawberry.argument(description="Only examples with exactly this tag.")]
SourceFilter = Annotated[
    ExampleSource | None,
    strawberry.argument(description="Only examples of this source (who wrote them: HUMAN, ASSISTED, MACHINE)."),
]
AdversaryFilter = Annotated[
    str | None,
    strawberry.argument(
        description="Only examples a machine adversary of this name suggested or wrote (Adversary.name)."
    ),
]
AuthorFilter = Annotated[
    strawberry.ID | None,
    strawberry.argument(
        description="Only this user's examples (User.id); for those who see only their own, another's: none."
    ),
]

# --------------------------------------------------------------------------- contexts
ContextRound = Annotated[int | None, strawberry.argument(description="Only this round's contexts (its number).")]
ContextTag = Annotated[str | None, strawberry.argument(description="Only contexts with exactly this tag.")]

# --------------------------------------------------------------------------- models
MyModels = Annotated[bool, strawberry.argument(description="true: only the models you submitted (sign in first).")]
PublishedFilter = Annotated[
    bool | None,
    strawberry.argument(description="true: published models only; false: unpublished ones only; null: both."),
]

# --------------------------------------------------------------------------- leaderboard
MetricWeights = Annotated[
    list[WeightInput] | None,
    strawberry.argument(
        description="Weights of the board's axes by name; axes left out keep their default. Null: the defaults, or "
        "the fork's weights with forkId."
    ),
]
DatasetWeights = Annotated[
    list[WeightInput] | None,
    strawberry.argument(
        description="Weights of the scoring data sets by name; sets left out do not count. Null: every set equally, "
        "or the fork's weights with forkId."
    ),
]
Sort = Annotated[LeaderboardSort, strawberry.argument(description="What orders the rows; the Dynascore by default.")]
SortMetric = Annotated[
    str | None,
    strawberry.argument(
        description="With sort: METRIC, the axis to sort by (a name in Leaderboard.metrics); leave it out otherwise."
    ),
]
ForkId = Annotated[
    strawberry.ID | None,
    strawberry.argument(
        description="A LeaderboardFork of this task whose saved weights to use; metricWeights or datasetWeights "
        "given here replace the fork's."
    ),
]

# --------------------------------------------------------------------------- work
JobStatusFilter = Annotated[TrainingStatus | None, strawberry.argument(description="Only the jobs in this state.")]
RunStatusFilter = Annotated[AdversaryRunStatus | None, strawberry.argument(description="Only the runs in this state.")]
