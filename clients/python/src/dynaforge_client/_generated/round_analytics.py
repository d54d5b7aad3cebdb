from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import ExampleSource, TimeBucket
from .fragments import StatsFields, UserFields


class RoundAnalytics(BaseModel):
    task: Optional["RoundAnalyticsTask"]


class RoundAnalyticsTask(BaseModel):
    id: str
    round: Optional["RoundAnalyticsTaskRound"]


class RoundAnalyticsTaskRound(BaseModel):
    number: int
    analytics: Optional["RoundAnalyticsTaskRoundAnalytics"]


class RoundAnalyticsTaskRoundAnalytics(BaseModel):
    bucket: TimeBucket
    periods: list["RoundAnalyticsTaskRoundAnalyticsPeriods"]
    annotators: list["RoundAnalyticsTaskRoundAnalyticsAnnotators"]
    sources: list["RoundAnalyticsTaskRoundAnalyticsSources"]


class RoundAnalyticsTaskRoundAnalyticsPeriods(BaseModel):
    start: datetime
    end: datetime
    collected: int
    fooled: int
    verified_fooled: int = Field(alias="verifiedFooled")


class RoundAnalyticsTaskRoundAnalyticsAnnotators(BaseModel):
    user: "RoundAnalyticsTaskRoundAnalyticsAnnotatorsUser"
    stats: "RoundAnalyticsTaskRoundAnalyticsAnnotatorsStats"
    median_time_taken_ms: Optional[int] = Field(alias="medianTimeTakenMs")
    validations: int
    validation_agreement: Optional[float] = Field(alias="validationAgreement")


RoundAnalyticsTaskRoundAnalyticsAnnotatorsUser = UserFields
RoundAnalyticsTaskRoundAnalyticsAnnotatorsStats = StatsFields


class RoundAnalyticsTaskRoundAnalyticsSources(BaseModel):
    source: ExampleSource
    stats: "RoundAnalyticsTaskRoundAnalyticsSourcesStats"


RoundAnalyticsTaskRoundAnalyticsSourcesStats = StatsFields
RoundAnalytics.model_rebuild()
RoundAnalyticsTask.model_rebuild()
RoundAnalyticsTaskRound.model_rebuild()
RoundAnalyticsTaskRoundAnalytics.model_rebuild()
RoundAnalyticsTaskRoundAnalyticsAnnotators.model_rebuild()
RoundAnalyticsTaskRoundAnalyticsSources.model_rebuild()
