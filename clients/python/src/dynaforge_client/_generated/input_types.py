from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel, Upload
from .enums import ValidationLabel


class AnswerTutorialInput(BaseModel):
    """Your practice answer to one tutorial item."""

    example_id: str = Field(alias="exampleId")
    "The item's example (TutorialItem.exampleId)."
    label: ValidationLabel
    "CORRECT (the label is right) or INCORRECT."


class CancelGenerationInput(BaseModel):
    """The generation run to stop."""

    id: str
    "The run's id (AdversaryRun.id)."


class CreateCrowdStudyInput(BaseModel):
    """A new crowd study of a task."""

    task_code: str = Field(alias="taskCode")
    "The task (Task.code)."
    platform: str
    "The platform (CrowdPlatform.name), such as 'prolific'."
    external_id: str = Field(alias="externalId")
    "The platform's id for the study (1 to 64 letters, digits, _, -)."
    name: str
    "Its name, shown to participants (1 to 200 characters)."
    completion_code: str = Field(alias="completionCode")
    "The completion code the platform expects (1 to 64 letters, digits, _, -)."
    currency: str = "GBP"
    "The currency of its pay (ISO 4217, capitals)."
    pay_per_verified_fooling: int = Field(alias="payPerVerifiedFooling", default=0)
    "Pay per accepted fooling example, in minor units (pence, cents); 0 to 10000."
    pay_per_agreeing_validation: int = Field(
        alias="payPerAgreeingValidation", default=0
    )
    "Pay per vote agreeing with the decision, in minor units; 0 to 10000."
    minimum_examples: int = Field(alias="minimumExamples", default=0)
    "Examples to write before finishing; 0 to 1000."
    minimum_validations: int = Field(alias="minimumValidations", default=0)
    "Votes to cast before finishing; 0 to 1000."


class CreateExampleInput(BaseModel):
    """An example to write in the task's current round."""

    task_code: str = Field(alias="taskCode")
    "The code of the task to write for (Task.code)."
    fields: Any
    "The input, target and metadata fields (see the task's JSON Schema)."
    context_id: Optional[str] = Field(alias="contextId", default=None)
    "The id of the context written against (from nextContext); it must belong to this task's current round. Null when the task takes no contexts, or when `fields` holds the context fields too."
    time_taken_ms: Optional[int] = Field(alias="timeTakenMs", default=None)
    "How long the annotator took to write the example, in milliseconds (0 to one week); optional, stored for analysis."
    tag: Optional[str] = None
    "An optional label of at most 100 characters (for example the tag of the context used); with the task's oneExamplePerTag setting a validator is served at most one example per tag."
    suggestion_id: Optional[str] = Field(alias="suggestionId", default=None)
    "The suggestion (suggestEdits) you wrote it from, if any: it then counts as ASSISTED and records the adversary. Yours, for this round and context."
    reply_stream: Optional[str] = Field(alias="replyStream", default=None)
    "Your stream id (8 to 64 letters, digits, '-' or '_'; a random UUID will do), already followed with the replyStream subscription: the target's reply is published there as it is written. Optional; the answer is the same with or without it."
    allow_near_duplicate: bool = Field(alias="allowNearDuplicate", default=False)
    "Store the example even when it is close to an earlier fooling example of the round (the answer was NearDuplicate): it is stored with that example and the similarity beside it (Example.nearDuplicate), for validators and owners to see."


class CreateRoundDatasetsInput(BaseModel):
    """Which round's accepted examples to split into data sets."""

    task_code: str = Field(alias="taskCode")
    "The code of the task."
    round: int
    "The round whose accepted examples are split (Round.number); it needs at least one, and no sets of its own yet."
    seed: int = 0
    "Seeds the shuffle: the same seed splits the same examples the same way (80% train, 10% dev, 10% test)."


class CrowdBonusInput(BaseModel):
    """One participant's bonus, as a row of the bonus file."""

    participant: str
    "The platform's id for the participant (externalId)."
    amount: int
    "The amount paid, in minor units."


class GenerateCandidatesInput(BaseModel):
    """A generation run to start."""

    task_code: str = Field(alias="taskCode")
    "The code of the task (Task.code)."
    adversary: str
    "The adversary to run (Query.adversaries; one that generates)."
    budget: int
    "The target queries it may spend, within the task's daily budget for generation."
    seed: Optional[int] = None
    "A seed for a run you can repeat; null: random."


class LoginInput(BaseModel):
    """The credentials of an existing account."""

    username: str
    "The account's username, in any case."
    password: str
    "The account's password."


class ModelCardInput(BaseModel):
    """What a model card says; every field is optional, and a null one is left out."""

    parameters: Optional[int] = None
    "How many parameters the model has: a whole number, 0 or more."
    license: Optional[str] = None
    "The licence it is released under, at most 100 characters."
    paper: Optional[str] = None
    "An http(s) link to the paper that describes it, at most 500 characters."
    description: Optional[str] = None
    "What you say about the model, at most 5000 characters."
    training_data: Optional[str] = Field(alias="trainingData", default=None)
    "What it was trained on, at most 2000 characters."


class OverruleVerdictInput(BaseModel):
    """An owner's verdict on a judged example, against the judge's."""

    id: str
    "The id of the example (Example.id)."
    fooled: bool
    "Whether the example fooled the model, as the owner decides."
    reason: str
    "Why, in 1 to 2000 characters (kept beside the judge's rationale)."


class PayCrowdBonusesInput(BaseModel):
    """The study whose participants to pay what they are owed."""

    study_id: str = Field(alias="studyId")
    "The study (CrowdStudy.id)."


class RecordCrowdBonusesInput(BaseModel):
    """Bonuses an owner paid on the platform by hand, to record here."""

    study_id: str = Field(alias="studyId")
    "The study (CrowdStudy.id)."
    reference: str
    "The platform's id for the payment, or a note that finds it there (1 to 100 characters)."
    bonuses: list["CrowdBonusInput"]
    "The rows paid (at most 1000), each at most what the participant is owed now."


class RegisterInput(BaseModel):
    """A new account: every field is checked, and each broken rule is reported."""

    username: str
    "The public name: 3 to 40 letters, digits, '_', '.' or '-'; refused when another account has it in any case."
    email: str
    "An email address such as name@example.org, at most 254 characters; stored in lower case. Never checked against other accounts' (an address already given is accepted, and no answer says so). Only the user and admins can read it."
    password: str
    "8 to 256 characters; only a hash of it is stored."


class RestartTutorialInput(BaseModel):
    """The tutorial to start again."""

    task_code: str = Field(alias="taskCode")
    "The code of the task (Task.code)."


class SetCrowdStudyOpenInput(BaseModel):
    """A study to close to new participants, or open again."""

    study_id: str = Field(alias="studyId")
    "The study (CrowdStudy.id)."
    is_open: bool = Field(alias="isOpen")
    "true: it takes new participants; false: it takes none."


class SetValidatorWeightsInput(BaseModel):
    """Validators' weights in one task, set all at once or not at all."""

    task_code: str = Field(alias="taskCode")
    "The code of the task (Task.code)."
    weights: list["ValidatorWeightInput"]
    "1 to 500 validators, each at most once."


class SubmitModelInput(BaseModel):
    """A model to submit to a task: it is evaluated on every scoring data set and its perturbed copies. Signed-in users; each may submit (models and predictions together) as often as the task allows in 24 hours, 3 times by default."""

    task_code: str = Field(alias="taskCode")
    "The code of the task to submit to."
    name: str
    "The model's display name, 1 to 100 characters."
    backend: str
    "A registered backend. Any signed-in user may use those the server opens to model builders (by default http and transformers); the others (python runs code on the server) only admins."
    config: Any
    "The backend's configuration (see docs/model-server.md)."
    card: Optional["ModelCardInput"] = None
    "Its model card; null: an empty one."
    published: bool = False
    "true puts it on the leaderboard for everyone who can see the task; false (the default) keeps it to you, the task's owners and admins until you publish it with updateModel."
    anonymous: bool = False
    "true hides your name from everyone but the task's owners and admins."


class SubmitPredictionsInput(BaseModel):
    """Predictions for one data set, submitted instead of a model; they count against the same 24-hour allowance as model submissions. Signed-in users."""

    task_code: str = Field(alias="taskCode")
    "The code of the task to submit to."
    name: str
    "A display name for the predictions, 1 to 100 characters."
    dataset_name: str = Field(alias="datasetName")
    "A data set you can see (the datasets query lists them)."
    predictions: list[Any]
    "One output per item, in the order of datasetItems, shaped like a model server's output."
    card: Optional["ModelCardInput"] = None
    "A model card for the predictions; null: an empty one."
    published: bool = False
    "true shows them to everyone who can see the task and puts them on its leaderboard (with gaps on the scoring sets they do not cover); false (the default) keeps them to you, the task's owners and admins."
    anonymous: bool = False
    "true hides your name from everyone but the task's owners and admins."


class SuggestEditsInput(BaseModel):
    """Your draft of an example, and where you are writing it."""

    task_code: str = Field(alias="taskCode")
    "The code of the task (Task.code)."
    draft: Any
    "Your draft's fields as createExample takes them: the input and the gold you claim (and the context fields when you write without a stored context)."
    context_id: Optional[str] = Field(alias="contextId", default=None)
    "The context you are writing against (from nextContext), if any."
    adversary: Optional[str] = None
    "Ask this adversary only (Query.adversaries); null: every available one that assists, in turn."
    limit: int = 3
    "How many suggestions at most, 1 to 10."


class UploadModelInput(BaseModel):
    """A Hugging Face model folder to submit to a task, as an archive: it is checked, stored by content hash and evaluated from the stored copy on every scoring data set. Signed-in users; it counts against the task's 24-hour allowance of submissions like submitModel, and its files against your storage quota (what your models' uploads take, each stored copy counted once)."""

    task_code: str = Field(alias="taskCode")
    "The code of the task to submit to."
    name: str
    "The model's display name, 1 to 100 characters."
    file: Upload
    "The archive (.tar.gz, .tar or .zip) of the folder that save_pretrained(folder, safe_serialization=True) and the tokenizer's save_pretrained wrote: config.json, tokenizer files, *.safetensors weights, optionally README.md; no pickle (*.bin, *.pt), no code, no auto_map. Sent as a GraphQL multipart request with the header 'Apollo-Require-Preflight: true' and a Content-Length; at most 2 GiB in all, 1 GiB a file and 64 files unless the server is configured otherwise."
    options: Optional[Any] = None
    "How the model reads the task (the transformers backend's keys, see docs/model-server.md): task, label_map, text_fields, target_field, max_length, question_field, context_field, doc_stride, max_answer_tokens; null: the defaults."
    card: Optional["ModelCardInput"] = None
    "Its model card; null: an empty one."
    published: bool = False
    "true puts it on the leaderboard for everyone who can see the task; false (the default) keeps it to you, the task's owners and admins until you publish it with updateModel."
    anonymous: bool = False
    "true hides your name from everyone but the task's owners and admins."


class ValidateExampleInput(BaseModel):
    """A vote on an example."""

    id: str
    "The id of the example to vote on (Example.id)."
    label: ValidationLabel
    "The verdict: CORRECT, INCORRECT (give correctedTarget if you can) or FLAGGED (unusable)."
    corrected_target: Optional[Any] = Field(alias="correctedTarget", default=None)
    "With INCORRECT only: the target fields as they should be (an object with some of the task's target fields), checked by the task's rules."
    reason: Optional[str] = None
    "Why, in your words, at most 2000 characters; optional. The task's owners and admins read it with the vote."
    time_taken_ms: Optional[int] = Field(alias="timeTakenMs", default=None)
    "How long you spent on the example before voting, in milliseconds (0 to one day); optional, stored with the vote for analysis."


class ValidatorWeightInput(BaseModel):
    """One validator's weight in a task's quorum."""

    user_id: str = Field(alias="userId")
    "The validator (User.id); they must have a crowd vote here."
    weight: float
    "0 (exclude: their queue empties and their votes are refused) to 10; 1 is everyone's default."


class WeightInput(BaseModel):
    """A weight for a metric or a data set of the leaderboard."""

    name: str
    "A metric's name (one of the board's axes) or a scoring data set's name; each name at most once."
    weight: float
    "A finite number, 0 or more: only the ratios between weights matter. 0 shows the metric (or leaves the data set out) without counting it; at least one weight must be above 0."


class WithdrawValidationInput(BaseModel):
    """The example whose vote you withdraw."""

    id: str
    "The example's id (Example.id)."


RecordCrowdBonusesInput.model_rebuild()
SetValidatorWeightsInput.model_rebuild()
SubmitModelInput.model_rebuild()
SubmitPredictionsInput.model_rebuild()
UploadModelInput.model_rebuild()
