from typing import Annotated, Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .fragments import AdversaryRunFields


class AdversaryRun(BaseModel):
    node: Optional[
        Annotated[
            Union["AdversaryRunNodeNode", "AdversaryRunNodeAdversaryRun"],
            Field(discriminator="typename__"),
        ]
    ]


class AdversaryRunNodeNode(BaseModel):
    typename__: Literal[
        "ApiToken",
        "Context",
        "CrowdStudy",
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


class AdversaryRunNodeAdversaryRun(AdversaryRunFields):
    typename__: Literal["AdversaryRun"] = Field(alias="__typename")


AdversaryRun.model_rebuild()
