from typing import Annotated, Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .fragments import (
    CrowdStudyFields,
    CrowdStudyFieldsParticipants,  # noqa: F401
)


class CrowdStudy(BaseModel):
    node: Optional[
        Annotated[
            Union["CrowdStudyNodeNode", "CrowdStudyNodeCrowdStudy"],
            Field(discriminator="typename__"),
        ]
    ]


class CrowdStudyNodeNode(BaseModel):
    typename__: Literal[
        "AdversaryRun",
        "ApiToken",
        "Context",
        "Dataset",
        "DatasetItem",
        "Evaluation",
        "Example",
        "LeaderboardFork",
        "LeaderboardSnapshot",
        "Model",
        "Node",
        "RegisteredModel",
        "Round",
        "Suggestion",
        "Task",
        "TaskProposal",
        "TrainingJob",
        "User",
        "Validation",
        "Webhook",
        "WebhookDelivery",
    ] = Field(alias="__typename")


class CrowdStudyNodeCrowdStudy(CrowdStudyFields):
    typename__: Literal["CrowdStudy"] = Field(alias="__typename")


CrowdStudy.model_rebuild()
