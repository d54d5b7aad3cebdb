from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import StatsFields


class MyStats(BaseModel):
    my_stats: Optional["MyStatsMyStats"] = Field(alias="myStats")


class MyStatsMyStats(BaseModel):
    task_code: str = Field(alias="taskCode")
    remaining_today: Optional[int] = Field(alias="remainingToday")
    total: "MyStatsMyStatsTotal"
    rounds: list["MyStatsMyStatsRounds"]


MyStatsMyStatsTotal = StatsFields


class MyStatsMyStatsRounds(BaseModel):
    round_number: int = Field(alias="roundNumber")
    stats: "MyStatsMyStatsRoundsStats"


MyStatsMyStatsRoundsStats = StatsFields
MyStats.model_rebuild()
MyStatsMyStats.model_rebuild()
MyStatsMyStatsRounds.model_rebuild()
