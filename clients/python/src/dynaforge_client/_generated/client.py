from collections.abc import AsyncIterator
from typing import Any, Optional, Union

from .adversaries import Adversaries
from .adversary_run import AdversaryRun
from .answer_tutorial import AnswerTutorial
from .async_base_client import AsyncBaseClient
from .base_model import UNSET, UnsetType
from .cancel_generation import CancelGeneration
from .create_crowd_study import CreateCrowdStudy
from .create_example import CreateExample
from .create_round_datasets import CreateRoundDatasets
from .crowd_platforms import CrowdPlatforms
from .crowd_studies import CrowdStudies
from .crowd_study import CrowdStudy
from .dataset_items import DatasetItems
from .datasets import Datasets
from .enums import ContextStrategy, LeaderboardSort, TimeBucket, ValidationMode
from .evaluation_progress import EvaluationProgress
from .example import Example
from .example_to_validate import ExampleToValidate
from .generate_candidates import GenerateCandidates
from .input_types import (
    AnswerTutorialInput,
    CancelGenerationInput,
    CreateCrowdStudyInput,
    CreateExampleInput,
    CreateRoundDatasetsInput,
    GenerateCandidatesInput,
    LoginInput,
    OverruleVerdictInput,
    PayCrowdBonusesInput,
    RecordCrowdBonusesInput,
    RegisterInput,
    RestartTutorialInput,
    SetCrowdStudyOpenInput,
    SetValidatorWeightsInput,
    SubmitModelInput,
    SubmitPredictionsInput,
    SuggestEditsInput,
    UploadModelInput,
    ValidateExampleInput,
    WeightInput,
    WithdrawValidationInput,
)
from .leaderboard import Leaderboard
from .login import Login
from .me import Me
from .model_fooled import ModelFooled
from .model_results import ModelResults
from .my_stats import MyStats
from .next_context import NextContext
from .overrule_verdict import OverruleVerdict
from .paired_test import PairedTest
from .pay_crowd_bonuses import PayCrowdBonuses
from .record_crowd_bonuses import RecordCrowdBonuses
from .register import Register
from .reply_stream import ReplyStream
from .restart_tutorial import RestartTutorial
from .round import Round
from .round_analytics import RoundAnalytics
from .set_crowd_study_open import SetCrowdStudyOpen
from .set_validator_weights import SetValidatorWeights
from .submit_model import SubmitModel
from .submit_predictions import SubmitPredictions
from .suggest_edits import SuggestEdits
from .task import Task
from .tasks import Tasks
from .tutorial import Tutorial
from .upload_model import UploadModel
from .validate_example import ValidateExample
from .validator_quality import ValidatorQuality
from .withdraw_validation import WithdrawValidation


def gql(q: str) -> str:
    return q


class GeneratedClient(AsyncBaseClient):
    async def login(self, input: LoginInput, **kwargs: Any) -> Login:
        query = gql("""
            mutation Login($input: LoginInput!) {
              login(input: $input) {
                __typename
                ... on AuthPayload {
                  token
                  user {
                    ...UserFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="Login", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Login.model_validate(data)

    async def register(self, input: RegisterInput, **kwargs: Any) -> Register:
        query = gql("""
            mutation Register($input: RegisterInput!) {
              account: register(input: $input) {
                __typename
                ... on AuthPayload {
                  token
                  user {
                    ...UserFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="Register", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Register.model_validate(data)

    async def me(self, **kwargs: Any) -> Me:
        query = gql("""
            query Me {
              me {
                ...UserFields
              }
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="Me", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Me.model_validate(data)

    async def adversaries(self, task_code: str, **kwargs: Any) -> Adversaries:
        query = gql("""
            query Adversaries($taskCode: String!) {
              task(code: $taskCode) {
                id
                adversaries {
                  name
                  description
                  needsDraft
                  assists
                  generates
                  available
                  unavailableReason
                }
              }
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code}
        response = await self.execute(
            query=query, operation_name="Adversaries", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Adversaries.model_validate(data)

    async def suggest_edits(
        self, input: SuggestEditsInput, **kwargs: Any
    ) -> SuggestEdits:
        query = gql("""
            mutation SuggestEdits($input: SuggestEditsInput!) {
              suggestEdits(input: $input) {
                __typename
                ... on EditsSuggested {
                  draft {
                    ...TargetVerdictFields
                  }
                  suggestions {
                    id
                    adversary
                    fields
                    edits
                    rationale
                    verdict {
                      ...TargetVerdictFields
                    }
                    moves {
                      label
                      before
                      after
                    }
                  }
                  adversaries
                  queries
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }

            fragment TargetVerdictFields on TargetVerdict {
              fooled
              goldProbability
              prediction {
                ...PredictionFields
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="SuggestEdits", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SuggestEdits.model_validate(data)

    async def generate_candidates(
        self, input: GenerateCandidatesInput, **kwargs: Any
    ) -> GenerateCandidates:
        query = gql("""
            mutation GenerateCandidates($input: GenerateCandidatesInput!) {
              generateCandidates(input: $input) {
                __typename
                ... on GenerationStarted {
                  run {
                    ...AdversaryRunFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment AdversaryRunFields on AdversaryRun {
              id
              adversary
              roundNumber
              status
              budget
              seed
              queries
              itemsTotal
              itemsDone
              candidates
              error
              createdAt
              startedAt
              finishedAt
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="GenerateCandidates",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return GenerateCandidates.model_validate(data)

    async def cancel_generation(
        self, input: CancelGenerationInput, **kwargs: Any
    ) -> CancelGeneration:
        query = gql("""
            mutation CancelGeneration($input: CancelGenerationInput!) {
              cancelGeneration(input: $input) {
                __typename
                ... on GenerationCancelled {
                  run {
                    ...AdversaryRunFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment AdversaryRunFields on AdversaryRun {
              id
              adversary
              roundNumber
              status
              budget
              seed
              queries
              itemsTotal
              itemsDone
              candidates
              error
              createdAt
              startedAt
              finishedAt
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="CancelGeneration",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CancelGeneration.model_validate(data)

    async def adversary_run(self, id: str, **kwargs: Any) -> AdversaryRun:
        query = gql("""
            query AdversaryRun($id: ID!) {
              node(id: $id) {
                __typename
                ... on AdversaryRun {
                  ...AdversaryRunFields
                }
              }
            }

            fragment AdversaryRunFields on AdversaryRun {
              id
              adversary
              roundNumber
              status
              budget
              seed
              queries
              itemsTotal
              itemsDone
              candidates
              error
              createdAt
              startedAt
              finishedAt
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = await self.execute(
            query=query, operation_name="AdversaryRun", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AdversaryRun.model_validate(data)

    async def crowd_platforms(self, **kwargs: Any) -> CrowdPlatforms:
        query = gql("""
            query CrowdPlatforms {
              crowdPlatforms {
                ...CrowdPlatformFields
              }
            }

            fragment CrowdPlatformFields on CrowdPlatform {
              name
              title
              parameters
              pays
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="CrowdPlatforms", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CrowdPlatforms.model_validate(data)

    async def crowd_studies(self, task_code: str, **kwargs: Any) -> CrowdStudies:
        query = gql("""
            query CrowdStudies($taskCode: String!) {
              task(code: $taskCode) {
                id
                crowdStudies {
                  ...CrowdStudyFields
                }
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code}
        response = await self.execute(
            query=query, operation_name="CrowdStudies", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CrowdStudies.model_validate(data)

    async def crowd_study(self, id: str, **kwargs: Any) -> CrowdStudy:
        query = gql("""
            query CrowdStudy($id: ID!) {
              node(id: $id) {
                __typename
                ... on CrowdStudy {
                  ...CrowdStudyFields
                }
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = await self.execute(
            query=query, operation_name="CrowdStudy", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CrowdStudy.model_validate(data)

    async def create_crowd_study(
        self, input: CreateCrowdStudyInput, **kwargs: Any
    ) -> CreateCrowdStudy:
        query = gql("""
            mutation CreateCrowdStudy($input: CreateCrowdStudyInput!) {
              createCrowdStudy(input: $input) {
                __typename
                ... on CrowdStudyCreated {
                  study {
                    ...CrowdStudyFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="CreateCrowdStudy",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateCrowdStudy.model_validate(data)

    async def set_crowd_study_open(
        self, input: SetCrowdStudyOpenInput, **kwargs: Any
    ) -> SetCrowdStudyOpen:
        query = gql("""
            mutation SetCrowdStudyOpen($input: SetCrowdStudyOpenInput!) {
              setCrowdStudyOpen(input: $input) {
                __typename
                ... on CrowdStudyChanged {
                  study {
                    ...CrowdStudyFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="SetCrowdStudyOpen",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SetCrowdStudyOpen.model_validate(data)

    async def pay_crowd_bonuses(
        self, input: PayCrowdBonusesInput, **kwargs: Any
    ) -> PayCrowdBonuses:
        query = gql("""
            mutation PayCrowdBonuses($input: PayCrowdBonusesInput!) {
              payCrowdBonuses(input: $input) {
                __typename
                ... on CrowdBonusesPaid {
                  reference
                  participants
                  amount
                  study {
                    ...CrowdStudyFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="PayCrowdBonuses", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return PayCrowdBonuses.model_validate(data)

    async def record_crowd_bonuses(
        self, input: RecordCrowdBonusesInput, **kwargs: Any
    ) -> RecordCrowdBonuses:
        query = gql("""
            mutation RecordCrowdBonuses($input: RecordCrowdBonusesInput!) {
              recordCrowdBonuses(input: $input) {
                __typename
                ... on CrowdBonusesRecorded {
                  reference
                  participants
                  amount
                  study {
                    ...CrowdStudyFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment CrowdParticipantFields on CrowdParticipant {
              username
              externalId
              joinedAt
              completedAt
              work {
                ...CrowdWorkFields
              }
            }

            fragment CrowdStudyFields on CrowdStudy {
              id
              taskCode
              platform
              externalId
              name
              linkPath
              completionCode
              currency
              payPerVerifiedFooling
              payPerAgreeingValidation
              minimumExamples
              minimumValidations
              isOpen
              createdAt
              earned
              owed
              bonusFile
              participants {
                ...CrowdParticipantFields
              }
            }

            fragment CrowdWorkFields on CrowdWork {
              examples
              fooled
              verifiedFooling
              pendingExamples
              validations
              agreeingValidations
              pendingValidations
              timeTakenMs
              earned
              paid
              uncertain
              owed
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="RecordCrowdBonuses",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RecordCrowdBonuses.model_validate(data)

    async def next_context(
        self,
        task_code: str,
        tag: Union[Optional[str], UnsetType] = UNSET,
        strategy: Union[Optional[ContextStrategy], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> NextContext:
        query = gql("""
            query NextContext($taskCode: String!, $tag: String, $strategy: ContextStrategy) {
              nextContext(taskCode: $taskCode, tag: $tag, strategy: $strategy) {
                id
                fields
                tag
              }
            }
            """)
        variables: dict[str, object] = {
            "taskCode": task_code,
            "tag": tag,
            "strategy": strategy,
        }
        response = await self.execute(
            query=query, operation_name="NextContext", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return NextContext.model_validate(data)

    async def create_example(
        self, input: CreateExampleInput, **kwargs: Any
    ) -> CreateExample:
        query = gql("""
            mutation CreateExample($input: CreateExampleInput!) {
              createExample(input: $input) {
                __typename
                ... on ExampleCreated {
                  fooled
                  example {
                    ...ExampleFields
                  }
                }
                ... on PredictionPending {
                  message
                  example {
                    ...ExampleFields
                  }
                }
                ... on VerdictPending {
                  decidedBy
                  example {
                    ...ExampleFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="CreateExample", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CreateExample.model_validate(data)

    async def example(self, id: str, **kwargs: Any) -> Example:
        query = gql("""
            query Example($id: ID!) {
              example(id: $id) {
                ...ExampleFields
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = await self.execute(
            query=query, operation_name="Example", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Example.model_validate(data)

    async def example_to_validate(
        self, task_code: str, mode: ValidationMode, **kwargs: Any
    ) -> ExampleToValidate:
        query = gql("""
            query ExampleToValidate($taskCode: String!, $mode: ValidationMode!) {
              exampleToValidate(taskCode: $taskCode, mode: $mode) {
                ...ExampleFields
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code, "mode": mode}
        response = await self.execute(
            query=query,
            operation_name="ExampleToValidate",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ExampleToValidate.model_validate(data)

    async def validate_example(
        self, input: ValidateExampleInput, **kwargs: Any
    ) -> ValidateExample:
        query = gql("""
            mutation ValidateExample($input: ValidateExampleInput!) {
              validateExample(input: $input) {
                __typename
                ... on ValidationRecorded {
                  decided
                  example {
                    ...ExampleFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="ValidateExample", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ValidateExample.model_validate(data)

    async def overrule_verdict(
        self, input: OverruleVerdictInput, **kwargs: Any
    ) -> OverruleVerdict:
        query = gql("""
            mutation OverruleVerdict($input: OverruleVerdictInput!) {
              overruleVerdict(input: $input) {
                __typename
                ... on VerdictOverruled {
                  example {
                    ...ExampleFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="OverruleVerdict", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return OverruleVerdict.model_validate(data)

    async def model_fooled(
        self,
        task_code: str,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> AsyncIterator[ModelFooled]:
        query = gql("""
            subscription ModelFooled($taskCode: String!, $after: ID) {
              modelFooled(taskCode: $taskCode, after: $after) {
                ...ExampleFields
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code, "after": after}
        async for data in self.execute_ws(
            query=query, operation_name="ModelFooled", variables=variables, **kwargs
        ):
            yield ModelFooled.model_validate(data)

    async def reply_stream(
        self, stream_id: str, **kwargs: Any
    ) -> AsyncIterator[ReplyStream]:
        query = gql("""
            subscription ReplyStream($streamId: String!) {
              replyStream(streamId: $streamId) {
                index
                model
                text
                done
              }
            }
            """)
        variables: dict[str, object] = {"streamId": stream_id}
        async for data in self.execute_ws(
            query=query, operation_name="ReplyStream", variables=variables, **kwargs
        ):
            yield ReplyStream.model_validate(data)

    async def withdraw_validation(
        self, input: WithdrawValidationInput, **kwargs: Any
    ) -> WithdrawValidation:
        query = gql("""
            mutation WithdrawValidation($input: WithdrawValidationInput!) {
              withdrawValidation(input: $input) {
                __typename
                ... on ValidationWithdrawn {
                  example {
                    ...ExampleFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ExampleFields on Example {
              id
              fields
              fooled
              status
              tag
              createdAt
              nearDuplicate {
                similarity
              }
              prediction {
                ...PredictionFields
              }
              round {
                number
              }
              context {
                id
                fields
              }
              author {
                username
              }
              votes {
                correct
                incorrect
                flagged
              }
              source
              adversary
              verdict {
                decidedBy
                decided
                fooled
                rationale
                judgeModel
                lastError
                overruled
                overruleReason
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="WithdrawValidation",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return WithdrawValidation.model_validate(data)

    async def tutorial(self, task_code: str, **kwargs: Any) -> Tutorial:
        query = gql("""
            query Tutorial($taskCode: String!) {
              task(code: $taskCode) {
                id
                tutorial {
                  ...TutorialFields
                }
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }

            fragment TutorialFields on Tutorial {
              passMark
              required
              passed
              total
              answered
              correct
              score
              attempts
              items {
                exampleId
                fields
                context
                modelAnswer {
                  ...PredictionFields
                }
                yourAnswer
                expected
                explanation
                correct
              }
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code}
        response = await self.execute(
            query=query, operation_name="Tutorial", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Tutorial.model_validate(data)

    async def answer_tutorial(
        self, input: AnswerTutorialInput, **kwargs: Any
    ) -> AnswerTutorial:
        query = gql("""
            mutation AnswerTutorial($input: AnswerTutorialInput!) {
              answerTutorial(input: $input) {
                __typename
                ... on TutorialAnswered {
                  item {
                    exampleId
                    yourAnswer
                    expected
                    explanation
                    correct
                  }
                  tutorial {
                    passMark
                    required
                    passed
                    total
                    answered
                    correct
                    score
                    attempts
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="AnswerTutorial", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AnswerTutorial.model_validate(data)

    async def restart_tutorial(
        self, input: RestartTutorialInput, **kwargs: Any
    ) -> RestartTutorial:
        query = gql("""
            mutation RestartTutorial($input: RestartTutorialInput!) {
              restartTutorial(input: $input) {
                __typename
                ... on TutorialRestarted {
                  tutorial {
                    ...TutorialFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment PredictionFields on Prediction {
              fields
              label
              span {
                text
                start
              }
              probabilities {
                label
                probability
              }
              confidence
              generation {
                text
                tokens
                timeToFirstTokenMs
                totalMs
                finishReason
              }
            }

            fragment TutorialFields on Tutorial {
              passMark
              required
              passed
              total
              answered
              correct
              score
              attempts
              items {
                exampleId
                fields
                context
                modelAnswer {
                  ...PredictionFields
                }
                yourAnswer
                expected
                explanation
                correct
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="RestartTutorial", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RestartTutorial.model_validate(data)

    async def submit_model(self, input: SubmitModelInput, **kwargs: Any) -> SubmitModel:
        query = gql("""
            mutation SubmitModel($input: SubmitModelInput!) {
              submitModel(input: $input) {
                __typename
                ... on ModelSubmitted {
                  model {
                    ...ModelFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ModelFields on Model {
              id
              name
              backend
              status
              published
              anonymous
              createdAt
              card {
                parameters
                license
                paper
                description
                trainingData
              }
              task {
                code
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="SubmitModel", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SubmitModel.model_validate(data)

    async def upload_model(self, input: UploadModelInput, **kwargs: Any) -> UploadModel:
        query = gql("""
            mutation UploadModel($input: UploadModelInput!) {
              uploadModel(input: $input) {
                __typename
                ... on ModelUploaded {
                  artifact
                  files
                  size
                  stored
                  model {
                    ...ModelFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ModelFields on Model {
              id
              name
              backend
              status
              published
              anonymous
              createdAt
              card {
                parameters
                license
                paper
                description
                trainingData
              }
              task {
                code
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="UploadModel", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return UploadModel.model_validate(data)

    async def submit_predictions(
        self, input: SubmitPredictionsInput, **kwargs: Any
    ) -> SubmitPredictions:
        query = gql("""
            mutation SubmitPredictions($input: SubmitPredictionsInput!) {
              submitPredictions(input: $input) {
                __typename
                ... on ModelSubmitted {
                  model {
                    ...ModelFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment ModelFields on Model {
              id
              name
              backend
              status
              published
              anonymous
              createdAt
              card {
                parameters
                license
                paper
                description
                trainingData
              }
              task {
                code
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="SubmitPredictions",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SubmitPredictions.model_validate(data)

    async def model_results(
        self, id: str, after: Union[Optional[str], UnsetType] = UNSET, **kwargs: Any
    ) -> ModelResults:
        query = gql("""
            query ModelResults($id: ID!, $after: String) {
              model(id: $id) {
                ...ModelFields
                evaluations(first: 100, after: $after) {
                  nodes {
                    ...EvaluationFields
                  }
                  pageInfo {
                    hasNextPage
                    endCursor
                  }
                }
              }
            }

            fragment EvaluationFields on Evaluation {
              id
              status
              progress
              queuePosition
              throughput
              memoryGib
              generation {
                outputTokens
                tokensPerSecond
                timeToFirstTokenMs
                timeToFirstTokenP90Ms
              }
              itemCount
              unusableOutputs
              error
              scoredPart
              dataset {
                id
                name
                split
                size
              }
              metrics {
                ...MetricFields
              }
              slices {
                slice
                groups {
                  group
                  size
                  metrics {
                    name
                    value
                  }
                }
                gaps {
                  metric
                  gap
                  worstGroup
                  worstValue
                  overall
                  groupsCompared
                }
              }
              perturbations {
                perturbation
                kind
                consistency
                metrics {
                  name
                  value
                }
              }
              hardware {
                cpu
                cores
                memoryGb
                accelerator
                machine
              }
            }

            fragment MetricFields on EvaluationMetric {
              name
              value
              direction
              interval {
                low
                high
              }
            }

            fragment ModelFields on Model {
              id
              name
              backend
              status
              published
              anonymous
              createdAt
              card {
                parameters
                license
                paper
                description
                trainingData
              }
              task {
                code
              }
            }
            """)
        variables: dict[str, object] = {"id": id, "after": after}
        response = await self.execute(
            query=query, operation_name="ModelResults", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ModelResults.model_validate(data)

    async def leaderboard(
        self,
        task_code: str,
        sort: LeaderboardSort,
        metric_weights: Union[Optional[list[WeightInput]], UnsetType] = UNSET,
        dataset_weights: Union[Optional[list[WeightInput]], UnsetType] = UNSET,
        sort_metric: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Leaderboard:
        query = gql("""
            query Leaderboard($taskCode: String!, $metricWeights: [WeightInput!], $datasetWeights: [WeightInput!], $sort: LeaderboardSort!, $sortMetric: String) {
              task(code: $taskCode) {
                id
                leaderboard(
                  metricWeights: $metricWeights
                  datasetWeights: $datasetWeights
                  sort: $sort
                  sortMetric: $sortMetric
                ) {
                  taskCode
                  principalMetric
                  datasets
                  amrsFallback
                  metrics {
                    name
                    direction
                    unit
                    weight
                  }
                  metricWeights {
                    name
                    weight
                  }
                  datasetWeights {
                    name
                    weight
                  }
                  rows {
                    rank
                    dynascore
                    missing
                    model {
                      modelId
                      name
                      submitter {
                        username
                      }
                    }
                    metrics {
                      name
                      value
                      weight
                      interval {
                        low
                        high
                      }
                    }
                  }
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "taskCode": task_code,
            "metricWeights": metric_weights,
            "datasetWeights": dataset_weights,
            "sort": sort,
            "sortMetric": sort_metric,
        }
        response = await self.execute(
            query=query, operation_name="Leaderboard", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Leaderboard.model_validate(data)

    async def evaluation_progress(
        self, model_id: str, **kwargs: Any
    ) -> AsyncIterator[EvaluationProgress]:
        query = gql("""
            subscription EvaluationProgress($modelId: ID!) {
              evaluationProgress(modelId: $modelId) {
                evaluationId
                modelId
                datasetId
                datasetName
                status
                progress
                error
              }
            }
            """)
        variables: dict[str, object] = {"modelId": model_id}
        async for data in self.execute_ws(
            query=query,
            operation_name="EvaluationProgress",
            variables=variables,
            **kwargs,
        ):
            yield EvaluationProgress.model_validate(data)

    async def paired_test(
        self, task_code: str, model: str, against: str, dataset: str, **kwargs: Any
    ) -> PairedTest:
        query = gql("""
            query PairedTest($taskCode: String!, $model: ID!, $against: ID!, $dataset: ID!) {
              task(code: $taskCode) {
                id
                pairedTest(model: $model, against: $against, dataset: $dataset) {
                  items
                  bothRight
                  onlyModelRight
                  onlyAgainstRight
                  bothWrong
                  mcnemarStatistic
                  mcnemarPValue
                  metric
                  modelValue
                  againstValue
                  difference {
                    value
                    low
                    high
                  }
                  bootstrapPValue
                  resamples
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "taskCode": task_code,
            "model": model,
            "against": against,
            "dataset": dataset,
        }
        response = await self.execute(
            query=query, operation_name="PairedTest", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return PairedTest.model_validate(data)

    async def tasks(self, **kwargs: Any) -> Tasks:
        query = gql("""
            query Tasks {
              tasks {
                ...TaskFields
              }
            }

            fragment RoundFields on Round {
              id
              number
              description
              startedAt
              endedAt
              targetModels {
                name
                backend
              }
              stats {
                ...StatsFields
              }
              statsBySource {
                ...SourceStatsFields
              }
            }

            fragment SourceStatsFields on SourceStats {
              source
              stats {
                ...StatsFields
              }
            }

            fragment StatsFields on Stats {
              collected
              fooled
              verifiedFooled
              accepted
              rejected
              flagged
              retracted
              pending
              vmer
              foolingRate
            }

            fragment TaskFields on Task {
              id
              code
              name
              description
              instructions
              labels
              principalMetric
              metrics
              perturbations
              fairnessSlices
              active
              fields {
                name
                type
                role
                description
                choices
              }
              currentRound {
                ...RoundFields
              }
              stats {
                ...StatsFields
              }
              statsBySource {
                ...SourceStatsFields
              }
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="Tasks", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Tasks.model_validate(data)

    async def task(self, code: str, **kwargs: Any) -> Task:
        query = gql("""
            query Task($code: String!) {
              task(code: $code) {
                ...TaskFields
                rounds {
                  ...RoundFields
                }
              }
            }

            fragment RoundFields on Round {
              id
              number
              description
              startedAt
              endedAt
              targetModels {
                name
                backend
              }
              stats {
                ...StatsFields
              }
              statsBySource {
                ...SourceStatsFields
              }
            }

            fragment SourceStatsFields on SourceStats {
              source
              stats {
                ...StatsFields
              }
            }

            fragment StatsFields on Stats {
              collected
              fooled
              verifiedFooled
              accepted
              rejected
              flagged
              retracted
              pending
              vmer
              foolingRate
            }

            fragment TaskFields on Task {
              id
              code
              name
              description
              instructions
              labels
              principalMetric
              metrics
              perturbations
              fairnessSlices
              active
              fields {
                name
                type
                role
                description
                choices
              }
              currentRound {
                ...RoundFields
              }
              stats {
                ...StatsFields
              }
              statsBySource {
                ...SourceStatsFields
              }
            }
            """)
        variables: dict[str, object] = {"code": code}
        response = await self.execute(
            query=query, operation_name="Task", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Task.model_validate(data)

    async def round(
        self,
        task_code: str,
        number: Union[Optional[int], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Round:
        query = gql("""
            query Round($taskCode: String!, $number: Int) {
              round(taskCode: $taskCode, number: $number) {
                ...RoundFields
              }
            }

            fragment RoundFields on Round {
              id
              number
              description
              startedAt
              endedAt
              targetModels {
                name
                backend
              }
              stats {
                ...StatsFields
              }
              statsBySource {
                ...SourceStatsFields
              }
            }

            fragment SourceStatsFields on SourceStats {
              source
              stats {
                ...StatsFields
              }
            }

            fragment StatsFields on Stats {
              collected
              fooled
              verifiedFooled
              accepted
              rejected
              flagged
              retracted
              pending
              vmer
              foolingRate
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code, "number": number}
        response = await self.execute(
            query=query, operation_name="Round", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Round.model_validate(data)

    async def my_stats(self, task_code: str, **kwargs: Any) -> MyStats:
        query = gql("""
            query MyStats($taskCode: String!) {
              task(code: $taskCode) {
                viewerStats {
                  taskCode
                  remainingToday
                  total {
                    ...StatsFields
                  }
                  rounds {
                    roundNumber
                    stats {
                      ...StatsFields
                    }
                  }
                }
              }
            }

            fragment StatsFields on Stats {
              collected
              fooled
              verifiedFooled
              accepted
              rejected
              flagged
              retracted
              pending
              vmer
              foolingRate
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code}
        response = await self.execute(
            query=query, operation_name="MyStats", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return MyStats.model_validate(data)

    async def datasets(
        self,
        task_code: str,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Datasets:
        query = gql("""
            query Datasets($taskCode: String!, $after: String) {
              task(code: $taskCode) {
                id
                datasets(first: 100, after: $after) {
                  nodes {
                    ...DatasetFields
                  }
                  pageInfo {
                    hasNextPage
                    endCursor
                  }
                }
              }
            }

            fragment DatasetFields on Dataset {
              id
              name
              description
              access
              source
              split
              size
              createdAt
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code, "after": after}
        response = await self.execute(
            query=query, operation_name="Datasets", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Datasets.model_validate(data)

    async def dataset_items(
        self, id: str, after: Union[Optional[str], UnsetType] = UNSET, **kwargs: Any
    ) -> DatasetItems:
        query = gql("""
            query DatasetItems($id: ID!, $after: String) {
              datasetItems(id: $id, first: 500, after: $after) {
                nodes {
                  id
                  position
                  fields
                }
                pageInfo {
                  hasNextPage
                  endCursor
                }
              }
            }
            """)
        variables: dict[str, object] = {"id": id, "after": after}
        response = await self.execute(
            query=query, operation_name="DatasetItems", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return DatasetItems.model_validate(data)

    async def create_round_datasets(
        self, input: CreateRoundDatasetsInput, **kwargs: Any
    ) -> CreateRoundDatasets:
        query = gql("""
            mutation CreateRoundDatasets($input: CreateRoundDatasetsInput!) {
              createRoundDatasets(input: $input) {
                __typename
                ... on DatasetsCreated {
                  datasets {
                    ...DatasetFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment DatasetFields on Dataset {
              id
              name
              description
              access
              source
              split
              size
              createdAt
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="CreateRoundDatasets",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CreateRoundDatasets.model_validate(data)

    async def validator_quality(
        self,
        task_code: str,
        round: Union[Optional[int], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> ValidatorQuality:
        query = gql("""
            query ValidatorQuality($taskCode: String!, $round: Int) {
              task(code: $taskCode) {
                id
                validatorQuality(round: $round) {
                  ...ValidatorQualityFields
                }
              }
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }

            fragment ValidatorQualityFields on ValidatorQuality {
              roundNumber
              alpha
              pairedExamples
              validators {
                user {
                  ...UserFields
                }
                weight
                votes
                decidedVotes
                agreedVotes
                agreement
                ownerDecidedVotes
                agreedWithOwnerVotes
                ownerAgreement
                medianTimeTakenMs
              }
              rounds {
                roundNumber
                alpha
                pairedExamples
                votes
              }
            }
            """)
        variables: dict[str, object] = {"taskCode": task_code, "round": round}
        response = await self.execute(
            query=query,
            operation_name="ValidatorQuality",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ValidatorQuality.model_validate(data)

    async def set_validator_weights(
        self, input: SetValidatorWeightsInput, **kwargs: Any
    ) -> SetValidatorWeights:
        query = gql("""
            mutation SetValidatorWeights($input: SetValidatorWeightsInput!) {
              setValidatorWeights(input: $input) {
                __typename
                ... on ValidatorWeightsSet {
                  quality {
                    ...ValidatorQualityFields
                  }
                }
                ...ErrorFields
              }
            }

            fragment ErrorFields on Error {
              message
              ... on InvalidInput {
                fieldErrors {
                  field
                  code
                  rule
                  message
                }
              }
              ... on RateLimited {
                retryAfterSeconds
              }
              ... on QuotaExceeded {
                quota
                limit
                resetsInSeconds
              }
              ... on NearDuplicate {
                similarity
                threshold
                yourExample {
                  id
                }
              }
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }

            fragment ValidatorQualityFields on ValidatorQuality {
              roundNumber
              alpha
              pairedExamples
              validators {
                user {
                  ...UserFields
                }
                weight
                votes
                decidedVotes
                agreedVotes
                agreement
                ownerDecidedVotes
                agreedWithOwnerVotes
                ownerAgreement
                medianTimeTakenMs
              }
              rounds {
                roundNumber
                alpha
                pairedExamples
                votes
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="SetValidatorWeights",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SetValidatorWeights.model_validate(data)

    async def round_analytics(
        self, task_code: str, round: int, bucket: TimeBucket, **kwargs: Any
    ) -> RoundAnalytics:
        query = gql("""
            query RoundAnalytics($taskCode: String!, $round: Int!, $bucket: TimeBucket!) {
              task(code: $taskCode) {
                id
                round(number: $round) {
                  number
                  analytics(bucket: $bucket) {
                    bucket
                    periods {
                      start
                      end
                      collected
                      fooled
                      verifiedFooled
                    }
                    annotators {
                      user {
                        ...UserFields
                      }
                      stats {
                        ...StatsFields
                      }
                      medianTimeTakenMs
                      validations
                      validationAgreement
                    }
                    sources {
                      source
                      stats {
                        ...StatsFields
                      }
                    }
                  }
                }
              }
            }

            fragment StatsFields on Stats {
              collected
              fooled
              verifiedFooled
              accepted
              rejected
              flagged
              retracted
              pending
              vmer
              foolingRate
            }

            fragment UserFields on User {
              id
              username
              isAdmin
            }
            """)
        variables: dict[str, object] = {
            "taskCode": task_code,
            "round": round,
            "bucket": bucket,
        }
        response = await self.execute(
            query=query, operation_name="RoundAnalytics", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RoundAnalytics.model_validate(data)
