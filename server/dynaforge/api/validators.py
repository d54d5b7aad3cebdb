"""Validator quality resolvers: each validator's agreement with decided outcomes and owners, a round's Krippendorff's
alpha, and the weights a task's owners give validators in its quorum (dynaforge.services.validator_quality)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from dynaforge.api.context import Info
from dynaforge.api.errors import (
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    errors_as_union,
)
from dynaforge.api.node import parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.user import User
from dynaforge.services import validator_quality as service


@strawberry.type(description="One validator's record in a task, or in one round of it (Task.validatorQuality).")
class ValidatorStanding:
    user: User = strawberry.field(description="The validator.")
    weight: float = strawberry.field(
        description="How much their votes count in the task's quorum: 1 unless the owners set another "
        "(setValidatorWeights); 0 excludes them from the crowd queue."
    )
    votes: int = strawberry.field(description="Crowd votes they cast (an owner's votes decide alone and are not here).")
    decided_votes: int = strawberry.field(
        description="Of those, votes on examples decided since (accepted or rejected)."
    )
    agreed_votes: int = strawberry.field(
        description="Of the decided, votes pointing the way the decision went: CORRECT on an accepted example, "
        "INCORRECT or FLAGGED on a rejected one."
    )
    agreement: float | None = strawberry.field(
        description="agreedVotes / decidedVotes, between 0 and 1; null before any of their votes is decided."
    )
    owner_decided_votes: int = strawberry.field(
        description="Of the decided, votes on examples an owner's (or admin's) vote then decided: an override."
    )
    agreed_with_owner_votes: int = strawberry.field(description="Of those, votes the owner's decision agreed with.")
    owner_agreement: float | None = strawberry.field(
        description="agreedWithOwnerVotes / ownerDecidedVotes, between 0 and 1; null when no owner decided any."
    )
    median_time_taken_ms: int | None = strawberry.field(
        description="The median time their votes took, as their client measured it; null when none was sent."
    )

    @classmethod
    def of(cls, value: service.ValidatorStanding) -> ValidatorStanding:
        return cls(
            user=User.from_row(value.user),
            weight=value.weight,
            votes=value.votes,
            decided_votes=value.decided,
            agreed_votes=value.agreed,
            agreement=value.agreement,
            owner_decided_votes=value.owner_decided,
            agreed_with_owner_votes=value.agreed_with_owner,
            owner_agreement=value.owner_agreement,
            median_time_taken_ms=value.median_time_taken_ms,
        )


@strawberry.type(description="How much a round's crowd validators agree with each other.")
class RoundAgreement:
    round_number: int = strawberry.field(description="The round's number.")
    alpha: float | None = strawberry.field(
        description="Krippendorff's alpha over the round's crowd votes (nominal: CORRECT, INCORRECT, FLAGGED), from "
        "1 (perfect agreement) through 0 (as by chance) to below 0; null when no example has two crowd votes or "
        "every vote has the same label."
    )
    paired_examples: int = strawberry.field(description="Examples with at least two crowd votes: the ones alpha reads.")
    votes: int = strawberry.field(description="Crowd votes in the round.")


@strawberry.type(
    description="The task's validators as its owners see them: agreement with decisions and with owners, weights, "
    "and the crowd's Krippendorff's alpha per round."
)
class ValidatorQuality:
    round_number: int | None = strawberry.field(
        description="The round the standings and `alpha` cover; null: every round."
    )
    alpha: float | None = strawberry.field(
        description="Krippendorff's alpha over the covered crowd votes (see RoundAgreement.alpha)."
    )
    paired_examples: int = strawberry.field(description="Examples `alpha` reads (two crowd votes or more).")
    validators: list[ValidatorStanding] = strawberry.field(
        description="Every crowd validator with a vote in the covered rounds, lowest agreement first (those with no "
        "decided vote last)."
    )
    rounds: list[RoundAgreement] = strawberry.field(description="Every round of the task, oldest first.")

    @classmethod
    def of(cls, value: service.ValidatorReport) -> ValidatorQuality:
        return cls(
            round_number=value.round_number,
            alpha=value.alpha,
            paired_examples=value.units,
            validators=[ValidatorStanding.of(v) for v in value.validators],
            rounds=[
                RoundAgreement(round_number=r.round_number, alpha=r.alpha, paired_examples=r.units, votes=r.votes)
                for r in value.rounds
            ],
        )


@task_list("validatorQuality")
async def validator_quality_of(info: Info, task_code: str, round_number: int | None) -> ValidatorQuality:
    """Task.validatorQuality."""
    return ValidatorQuality.of(await service.report(*info.context.caller, task_code, round_number))


@strawberry.input(description="One validator's weight in a task's quorum.")
class ValidatorWeightInput:
    user_id: strawberry.ID = strawberry.field(description="The validator (User.id); they must have a crowd vote here.")
    weight: float = strawberry.field(
        description=f"0 (exclude: their queue empties and their votes are refused) to {service.MAX_WEIGHT:g}; 1 is "
        "everyone's default."
    )


@strawberry.input(description="Validators' weights in one task, set all at once or not at all.")
class SetValidatorWeightsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    weights: list[ValidatorWeightInput] = strawberry.field(
        description=f"1 to {service.MAX_WEIGHTS_PER_CALL} validators, each at most once."
    )


@strawberry.type(description="The weights are set; the task's validators as they stand now.")
class ValidatorWeightsSet:
    quality: ValidatorQuality = strawberry.field(description="The task's validator quality over every round.")


SetValidatorWeightsResult = Annotated[
    ValidatorWeightsSet | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "SetValidatorWeightsResult",
        description="ValidatorWeightsSet: every weight is set. The other members are the expected failures, and set "
        "none: InvalidInput (a weight out of range, an id that is not a User's or of someone with no crowd vote in "
        "the task, an id given twice), NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound "
        "(no such task).",
    ),
]


@strawberry.type
class ValidatorMutation:
    @strawberry.mutation(
        description="The task's owners and admins weigh validators in its quorum: an example is decided when the "
        "weights of its CORRECT (or INCORRECT, or FLAGGED) crowd votes add up to the quorum. A new weight counts "
        "from each undecided example's next vote; decisions made stand."
    )
    @errors_as_union
    async def set_validator_weights(
        self, info: Info, input: Annotated[SetValidatorWeightsInput, strawberry.argument(description="The weights.")]
    ) -> SetValidatorWeightsResult:
        entries = [(parse_id(e.user_id, f"weights[{i}].userId", "User"), e.weight) for i, e in enumerate(input.weights)]
        await service.set_weights(*info.context.caller, input.task_code, entries)
        return ValidatorWeightsSet(
            quality=ValidatorQuality.of(await service.report(*info.context.caller, input.task_code))
        )
