"""The client's result types under public names: what its methods return, for annotations in your own code.

They are pydantic models generated from the server's schema (fields in snake_case), so ``mypy --strict`` on a script
catches a field that does not exist (``row.dynascroe``), and an editor completes the ones that do::

    from dynaforge_client import Client
    from dynaforge_client.types import LeaderboardRow

    def best(client: Client) -> LeaderboardRow:
        return client.leaderboard("nli").rows[0]
"""

from __future__ import annotations

from ._generated.adversaries import AdversariesTaskAdversaries as Adversary
from ._generated.dataset_items import DatasetItemsDatasetItemsNodes as DatasetItem
from ._generated.evaluation_progress import EvaluationProgressEvaluationProgress as ProgressEvent
from ._generated.fragments import AdversaryRunFields as AdversaryRun
from ._generated.fragments import CrowdParticipantFields as CrowdParticipant
from ._generated.fragments import CrowdPlatformFields as CrowdPlatform
from ._generated.fragments import CrowdStudyFields as CrowdStudy
from ._generated.fragments import CrowdWorkFields as CrowdWork
from ._generated.fragments import DatasetFields as Dataset
from ._generated.fragments import EvaluationFields as Evaluation
from ._generated.fragments import ExampleFields as Example
from ._generated.fragments import MetricFields as Metric
from ._generated.fragments import ModelFields as Model
from ._generated.fragments import PredictionFields as Prediction
from ._generated.fragments import RoundFields as Round
from ._generated.fragments import StatsFields as Stats
from ._generated.fragments import TaskFields as Task
from ._generated.fragments import UserFields as User
from ._generated.leaderboard import LeaderboardTaskLeaderboardRows as LeaderboardRow
from ._generated.my_stats import MyStatsTaskViewerStats as MyStats
from ._generated.next_context import NextContextNextContext as Context
from ._generated.paired_test import PairedTestTaskPairedTest as PairedTest
from ._generated.pay_crowd_bonuses import PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid as CrowdBonusesPaid
from ._generated.suggest_edits import SuggestEditsSuggestEditsEditsSuggested as EditsSuggested
from ._generated.task import TaskTask as TaskDetail

__all__ = [
    "Adversary",
    "AdversaryRun",
    "Context",
    "CrowdBonusesPaid",
    "CrowdParticipant",
    "CrowdPlatform",
    "CrowdStudy",
    "CrowdWork",
    "Dataset",
    "DatasetItem",
    "Evaluation",
    "Example",
    "LeaderboardRow",
    "Metric",
    "Model",
    "PairedTest",
    "MyStats",
    "Prediction",
    "ProgressEvent",
    "Round",
    "Stats",
    "EditsSuggested",
    "Task",
    "TaskDetail",
    "User",
]
