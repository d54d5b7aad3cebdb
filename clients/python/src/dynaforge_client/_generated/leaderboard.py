from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import MetricDirection


class Leaderboard(BaseModel):
    leaderboard: Optional["LeaderboardLeaderboard"]


class LeaderboardLeaderboard(BaseModel):
    task_code: str = Field(alias="taskCode")
    principal_metric: str = Field(alias="principalMetric")
    datasets: list[str]
    amrs_fallback: bool = Field(alias="amrsFallback")
    metrics: list["LeaderboardLeaderboardMetrics"]
    metric_weights: list["LeaderboardLeaderboardMetricWeights"] = Field(
        alias="metricWeights"
    )
    dataset_weights: list["LeaderboardLeaderboardDatasetWeights"] = Field(
        alias="datasetWeights"
    )
    rows: list["LeaderboardLeaderboardRows"]


class LeaderboardLeaderboardMetrics(BaseModel):
    name: str
    direction: MetricDirection
    unit: Optional[str]
    weight: float


class LeaderboardLeaderboardMetricWeights(BaseModel):
    name: str
    weight: float


class LeaderboardLeaderboardDatasetWeights(BaseModel):
    name: str
    weight: float


class LeaderboardLeaderboardRows(BaseModel):
    rank: Optional[int]
    dynascore: Optional[float]
    missing: list[str]
    model: "LeaderboardLeaderboardRowsModel"
    metrics: list["LeaderboardLeaderboardRowsMetrics"]


class LeaderboardLeaderboardRowsModel(BaseModel):
    model_id: str = Field(alias="modelId")
    name: str
    submitter: Optional["LeaderboardLeaderboardRowsModelSubmitter"]


class LeaderboardLeaderboardRowsModelSubmitter(BaseModel):
    username: str


class LeaderboardLeaderboardRowsMetrics(BaseModel):
    name: str
    value: Optional[float]
    weight: float
    interval: Optional["LeaderboardLeaderboardRowsMetricsInterval"]


class LeaderboardLeaderboardRowsMetricsInterval(BaseModel):
    low: float
    high: float


Leaderboard.model_rebuild()
LeaderboardLeaderboard.model_rebuild()
LeaderboardLeaderboardRows.model_rebuild()
LeaderboardLeaderboardRowsModel.model_rebuild()
LeaderboardLeaderboardRowsMetrics.model_rebuild()
