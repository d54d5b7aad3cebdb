from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import StatsFields


class MyStats(BaseModel):
    task: Optional["MyStatsTask"]


class MyStatsTask(BaseModel):
    viewer_stats: Optional["MyStatsTaskViewerStats"] = Field(alias="viewerStats")


class MyStatsTaskViewerStats(BaseModel):
    task_code: str = Field(alias="taskCode")
    remaining_today: Optional[int] = Field(alias="remainingToday")
    total: "MyStatsTaskViewerStatsTotal"
    rounds: list["MyStatsTaskViewerStatsRounds"]


MyStatsTaskViewerStatsTotal = StatsFields


class MyStatsTaskViewerStatsRounds(BaseModel):
    round_number: int = Field(alias="roundNumber")
    stats: "MyStatsTaskViewerStatsRoundsStats"


MyStatsTaskViewerStatsRoundsStats = StatsFields
MyStats.model_rebuild()
MyStatsTask.model_rebuild()
MyStatsTaskViewerStats.model_rebuild()
MyStatsTaskViewerStatsRounds.model_rebuild()
