"""Data sets over GraphQL: scoring sets, round splits and uploads, their items, perturbed copies and a round's
accepted examples split into sets."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from dynaforge.api.context import Info, TaskCode
from dynaforge.api.contexts import binary_upload
from dynaforge.api.enums import (
    DatasetAccess,
    DatasetSource,
    DatasetSplit,
    PerturbationKind,
    raw,
)
from dynaforge.api.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.db.models import Dataset as DatasetRow
from dynaforge.db.models import DatasetAccess as DatasetAccessRow
from dynaforge.db.models import DatasetItem as DatasetItemRow
from dynaforge.db.models import as_utc
from dynaforge.services import datasets as dataset_service
from dynaforge.services import visibility

_SPLITS = {"train": DatasetSplit.TRAIN, "dev": DatasetSplit.DEV, "test": DatasetSplit.TEST}


@strawberry.type(
    description="A frozen set of a task's examples that models are evaluated on. Anyone who can see the task sees "
    "its SCORING and STANDARD sets; HIDDEN ones only its owners and admins."
)
class Dataset(Node):
    row: strawberry.Private[DatasetRow]
    name: str = strawberry.field(
        description="Unique within the task: r{N}-train, r{N}-dev and r{N}-test for a round's sets, {set}~{name} for "
        "a perturbed copy, the owner's choice for an uploaded set."
    )
    description: str = strawberry.field(description="What the set holds, as its maker wrote it; may be empty.")
    access: DatasetAccess = strawberry.field(
        description="Who sees it and what it is for; a perturbed copy has its original's."
    )
    source: DatasetSource = strawberry.field(description="Where it came from.")
    split: DatasetSplit | None = strawberry.field(
        description="A round's set: its split (train, dev or test), which its perturbed copies share; null for an "
        "uploaded set."
    )
    perturbation: str | None = strawberry.field(
        description="A perturbed copy: the perturbation's name; null for any other set."
    )
    perturbation_kind: PerturbationKind | None = strawberry.field(description="A perturbed copy: what it measures.")
    size: int = strawberry.field(description="How many items it holds.")
    created_at: datetime = strawberry.field(description="When it was made (UTC).")

    @strawberry.field(
        description="A SCORING set (and its perturbed copies): the share of its items whose figures every model "
        "shows before the set's round ends (Evaluation.scoredPart PUBLIC; 1: every item, no private part); null "
        "for other sets."
    )
    def public_share(self, info: Info) -> float | None:
        if self.row.access != DatasetAccessRow.SCORING:
            return None
        return visibility.public_share(self.row, info.context.platform.settings.scoring_public_share)

    @strawberry.field(description="A perturbed copy: the data set it was made from; null for any other set.")
    async def parent(self, info: Info) -> Dataset | None:
        if self.row.parent_id is None:
            return None
        row, _ = await dataset_service.get_dataset(*info.context.caller, self.row.parent_id)
        return Dataset.from_row(row)

    @classmethod
    def from_row(cls, row: DatasetRow) -> Dataset:
        return cls(
            row=row,
            id=global_id("Dataset", row.id),
            name=row.name,
            description=row.description,
            access=DatasetAccess(row.access),
            source=DatasetSource(row.source),
            split=_SPLITS.get(row.split or ""),
            perturbation=row.perturbation,
            perturbation_kind=None if row.perturbation_kind is None else PerturbationKind(row.perturbation_kind),
            size=row.size,
            created_at=as_utc(row.created_at),
        )


@strawberry.type(description="One item of a data set; gold targets only where you may see them.")
class DatasetItem(Node):
    position: int = strawberry.field(
        description="Its place in the set, from 0: the order datasetItems lists items in and predictions follow."
    )
    original_position: int | None = strawberry.field(
        description="A perturbed copy's item: the position of the item of the original set it was made from."
    )
    fields: JSON = strawberry.field(
        description="The item's values keyed by field name; its gold fields (the targets and the fields that reveal "
        "them) are left out unless the set is STANDARD or you own the task (or are an admin)."
    )

    @classmethod
    def of(cls, item: DatasetItemRow) -> DatasetItem:
        return cls(
            id=global_id("DatasetItem", f"{item.dataset_id}:{item.position}"),
            position=item.position,
            original_position=item.original_position,
            fields=JSON(item.fields),
        )


@strawberry.type(description="A page of a data set's items in position order, and whether they carry their gold.")
class DatasetItemConnection(Connection[DatasetItem]):
    gold_visible: bool = strawberry.field(
        default=False, description="False: the gold fields were left out (a scoring or hidden set)."
    )


@strawberry.input(description="Which round's accepted examples to split into data sets.")
class CreateRoundDatasetsInput:
    task_code: str = strawberry.field(description="The code of the task.")
    round: int = strawberry.field(
        description="The round whose accepted examples are split (Round.number); it needs at least one, and no sets "
        "of its own yet."
    )
    seed: int = strawberry.field(
        default=0,
        description="Seeds the shuffle: the same seed splits the same examples the same way (80% train, 10% dev, "
        "10% test).",
    )


@strawberry.input(
    description="An owner's own perturbed copy of a scoring data set, as a JSONL file: one object per "
    "line with original_position (the item it was made from) and the task's fields; target fields "
    "left out are copied from the original."
)
class UploadPerturbedCopyInput:
    dataset_id: strawberry.ID = strawberry.field(
        description="The id of the SCORING data set the copy was made from (an original, not itself a copy)."
    )
    perturbation: str = strawberry.field(description="Its name, e.g. dialect-rewrite; the copy is named {set}~{name}.")
    kind: PerturbationKind = strawberry.field(description="Which figure the copy's consistency counts to.")
    file: Upload = strawberry.field(description="The JSONL file, sent as a GraphQL multipart request.")
    replace: bool = strawberry.field(default=False, description="Put it in place of a copy of the same name.")
    description: str = strawberry.field(
        default="", description="What the copy changes; empty: a description made from its name and kind."
    )


@strawberry.type(
    description="New data sets: a round's train, dev and test sets with the test set's perturbed copies "
    "(createRoundDatasets), or one uploaded perturbed copy (uploadPerturbedCopy)."
)
class DatasetsCreated:
    datasets: list[Dataset] = strawberry.field(
        description="The sets made; the task's models that have a backend are queued on the scoring ones."
    )


UploadPerturbedCopyResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "UploadPerturbedCopyResult",
        description="The new copy, or why not: problems named by line, not signed in, not an owner of the task, no "
        "such data set, or a copy of that name exists (pass replace: true).",
    ),
]


CreateRoundDatasetsResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "CreateRoundDatasetsResult",
        description="The new data sets, or why not: no accepted examples yet, not signed in, not an owner of the "
        "task, no such task or round, or the round's sets exist already.",
    ),
]


@task_list("datasets")
async def datasets_connection(
    info: Info, task_code: str, first: int | None, after: str | None, last: int | None, before: str | None
) -> Connection[Dataset]:
    """Task.datasets (and the deprecated root field)."""
    listing = await dataset_service.datasets_page(
        *info.context.caller, task_code, first=first, after=after, last=last, before=before
    )
    return Connection.from_listing(listing, Dataset.from_row)


@strawberry.type
class DatasetQuery:
    @strawberry.field(
        description="A task's data sets, oldest first (a round's sets beside their perturbed copies), for anyone who "
        "can see the task; HIDDEN ones for its owners and admins only. Pages of up to 100, 100 by default.",
        deprecation_reason="Use Task.datasets (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def datasets(
        self,
        info: Info,
        task_code: TaskCode,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Dataset] | None:
        return await datasets_connection(info, task_code, first, after, last, before)

    @strawberry.field(
        description="A page of a data set's items, in order, for anyone who can see the set; gold fields only "
        "where you may see its gold (see DatasetItem.fields)."
    )
    @errors_as_graphql
    async def dataset_items(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="The data set's id.")],
        first: Annotated[
            int | None, strawberry.argument(description="Page forward: this many items (1 to 500; default 100).")
        ] = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> DatasetItemConnection | None:
        dataset_id = parse_id(id, "id", "Dataset")
        page = await dataset_service.items(
            *info.context.caller, dataset_id, first=first, after=after, last=last, before=before
        )
        window = page.listing.window
        connection = DatasetItemConnection.of(
            ((DatasetItem.of(i), window.cursor(i)) for i in page.items),
            has_next=window.has_next,
            has_previous=window.has_previous,
            total=page.listing.total,
        )
        connection.gold_visible = page.gold_visible
        return connection


@strawberry.input(description="A data set and what to change in it; what is left out stays.")
class UpdateDatasetInput:
    id: strawberry.ID = strawberry.field(description="The data set's id (Dataset.id).")
    access: DatasetAccess | None = strawberry.field(
        default=None,
        description="Its new access (not a perturbed copy's: its copies follow it). SCORING queues an evaluation of "
        "every model that has none on it; STANDARD shows its gold to everyone who can see the task.",
    )
    name: str | None = strawberry.field(
        default=None, description="A new name, unique in the task: 1 to 100 lowercase letters, digits, '_', '.' or '-'."
    )
    description: str | None = strawberry.field(default=None, description="A new description: at most 5000 characters.")


@strawberry.input(description="The data set to delete.")
class DeleteDatasetInput:
    id: strawberry.ID = strawberry.field(description="The data set's id (Dataset.id).")


@strawberry.type(description="The data set as it is now.")
class DatasetUpdated:
    dataset: Dataset = strawberry.field(description="The data set, changed (its copies' access with it).")


@strawberry.type(description="The data set, its perturbed copies, their items and every evaluation on them are gone.")
class DatasetDeleted:
    id: strawberry.ID = strawberry.field(description="The id the deleted set had.")
    copy_ids: list[strawberry.ID] = strawberry.field(description="The ids its deleted perturbed copies had.")


UpdateDatasetResult = Annotated[
    DatasetUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "UpdateDatasetResult",
        description="DatasetUpdated: the changes are made. The other members are the expected failures, and change "
        "nothing: InvalidInput (a copy's access, a name or description too long), NotAuthenticated, Forbidden (not "
        "an owner of the task or an admin), NotFound (no such set you can see), AlreadyExists (the name is taken).",
    ),
]
DeleteDatasetResult = Annotated[
    DatasetDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "DeleteDatasetResult",
        description="DatasetDeleted: the set is gone. The other members are the expected failures, and delete "
        "nothing: InvalidInput (the id is not a Dataset's), NotAuthenticated, Forbidden (not an owner of the task or "
        "an admin), NotFound (no such set you can see), Conflict (an evaluation on it is running).",
    ),
]


@strawberry.type
class DatasetMutation:
    @strawberry.mutation(
        description="Owners and admins change a data set's access, name or description. A set made SCORING (with "
        "its copies) queues an evaluation of every model of the task that has none on it; one that stops being "
        "SCORING leaves the board, its evaluations staying on the models' pages."
    )
    @errors_as_union
    async def update_dataset(
        self, info: Info, input: Annotated[UpdateDatasetInput, strawberry.argument(description="What to change.")]
    ) -> UpdateDatasetResult:
        row = await dataset_service.update_dataset(
            *info.context.caller,
            parse_id(input.id, "id", "Dataset"),
            access=None if input.access is None else raw(input.access),
            name=input.name,
            description=input.description,
        )
        return DatasetUpdated(dataset=Dataset.from_row(row))

    @strawberry.mutation(
        description="Owners and admins delete a data set with its perturbed copies, their items and every "
        "evaluation on them; the models' other evaluations stay. Refused while an evaluation on it runs."
    )
    @errors_as_union
    async def delete_dataset(
        self, info: Info, input: Annotated[DeleteDatasetInput, strawberry.argument(description="The data set.")]
    ) -> DeleteDatasetResult:
        gone, copies = await dataset_service.delete_dataset(*info.context.caller, parse_id(input.id, "id", "Dataset"))
        return DatasetDeleted(id=global_id("Dataset", gone), copy_ids=[global_id("Dataset", c) for c in copies])

    @strawberry.mutation(
        description="Owners attach their own perturbed copy of a scoring set (instead of or beside "
        "the platform's); the task's models are evaluated on it and their robustness or fairness "
        "recomputed. All or nothing, problems named by line."
    )
    @errors_as_union
    async def upload_perturbed_copy(
        self,
        info: Info,
        input: Annotated[
            UploadPerturbedCopyInput,
            strawberry.argument(description="The original set, the copy's name and kind, and its JSONL file."),
        ],
    ) -> UploadPerturbedCopyResult:
        stream, _ = binary_upload(input.file)
        stream.seek(0)
        platform = info.context.platform
        records = dataset_service.read_jsonl(stream, platform.settings.context_upload_max_bytes)
        copy = await dataset_service.attach_perturbed_copy(
            platform,
            info.context.actor,
            parse_id(input.dataset_id, "datasetId", "Dataset"),
            input.perturbation,
            raw(input.kind),
            records,
            replace=input.replace,
            description=input.description,
        )
        return DatasetsCreated(datasets=[Dataset.from_row(copy)])

    @strawberry.mutation(
        description="Owners turn a round's accepted examples into train/dev/test data sets "
        "(a seeded split; the test set scores models)."
    )
    @errors_as_union
    async def create_round_datasets(
        self,
        info: Info,
        input: Annotated[
            CreateRoundDatasetsInput, strawberry.argument(description="The task, the round and the split's seed.")
        ],
    ) -> CreateRoundDatasetsResult:
        rows = await dataset_service.build_from_round(
            *info.context.caller, input.task_code, input.round, seed=input.seed
        )
        return DatasetsCreated(datasets=[Dataset.from_row(r) for r in rows])
