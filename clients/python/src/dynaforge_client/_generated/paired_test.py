from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class PairedTest(BaseModel):
    task: Optional["PairedTestTask"]


class PairedTestTask(BaseModel):
    id: str
    paired_test: Optional["PairedTestTaskPairedTest"] = Field(alias="pairedTest")


class PairedTestTaskPairedTest(BaseModel):
    items: int
    both_right: int = Field(alias="bothRight")
    only_model_right: int = Field(alias="onlyModelRight")
    only_against_right: int = Field(alias="onlyAgainstRight")
    both_wrong: int = Field(alias="bothWrong")
    mcnemar_statistic: int = Field(alias="mcnemarStatistic")
    mcnemar_p_value: float = Field(alias="mcnemarPValue")
    metric: str
    model_value: float = Field(alias="modelValue")
    against_value: float = Field(alias="againstValue")
    difference: "PairedTestTaskPairedTestDifference"
    bootstrap_p_value: float = Field(alias="bootstrapPValue")
    resamples: int


class PairedTestTaskPairedTestDifference(BaseModel):
    value: float
    low: Optional[float]
    high: Optional[float]


PairedTest.model_rebuild()
PairedTestTask.model_rebuild()
PairedTestTaskPairedTest.model_rebuild()
