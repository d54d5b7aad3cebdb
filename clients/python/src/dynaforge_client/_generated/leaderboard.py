from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import MetricDirection


class Leaderboard(BaseModel):
    task: Optional["LeaderboardTask"]


class LeaderboardTask(BaseModel):
    id: str
    leaderboard: Optional["LeaderboardTaskLeaderboard"]


class LeaderboardTaskLeaderboard(BaseModel):
    task_code: str = Field(alias="taskCode")
    principal_metric: str = Field(alias="principalMetric")
    datasets: list[str]
    amrs_fallback: bool = Field(alias="amrsFallback")
    metrics: list["LeaderboardTaskLeaderboardMetrics"]
    metric_weights: list["LeaderboardTaskLeaderboardMetricWeights"] = Field(
        alias="metricWeights"
    )
    dataset_weights: list["LeaderboardTaskLeaderboardDatasetWeights"] = Field(
        alias="datasetWeights"
    )
    rows: list["LeaderboardTaskLeaderboardRows"]


class LeaderboardTaskLeaderboardMetrics(BaseModel):
    name: str
    direction: MetricDirection
    unit: Optional[str]
    weight: float


class LeaderboardTaskLeaderboardMetricWeights(BaseModel):
    name: str
    weight: float


class LeaderboardTaskLeaderboardDatasetWeights(BaseModel):
    name: str
    weight: float


class LeaderboardTaskLeaderboardRows(BaseModel):
    rank: Optional[int]
    dynascore: Optional[float]
    missing: list[str]
    model: "LeaderboardTaskLeaderboardRowsModel"
    metrics: list["LeaderboardTaskLeaderboardRowsMetrics"]


class LeaderboardTaskLeaderboardRowsModel(BaseModel):
    model_id: str = Field(alias="modelId")
    name: str
    submitter: Optional["LeaderboardTaskLeaderboardRowsModelSubmitter"]


class LeaderboardTaskLeaderboardRowsModelSubmitter(BaseModel):
    username: str


class LeaderboardTaskLeaderboardRowsMetrics(BaseModel):
    name: str
    value: Optional[float]
    weight: float
    interval: Optional["LeaderboardTaskLeaderboardRowsMetricsInterval"]


class LeaderboardTaskLeaderboardRowsMetricsInterval(BaseModel):
    low: float
    high: float


Leaderboard.model_rebuild()
LeaderboardTask.model_rebuild()
LeaderboardTaskLeaderboard.model_rebuild()
LeaderboardTaskLeaderboardRows.model_rebuild()
LeaderboardTaskLeaderboardRowsModel.model_rebuild()
LeaderboardTaskLeaderboardRowsMetrics.model_rebuild()
