"""The world each cell of the authorisation matrix (test_authz_matrix.py) runs in: the toy task, one account per
role and, built on demand, the objects an operation acts on (an example, data sets, models, a proposal...).

Everything is made through the services (not through the API under test) on the test's rolled-back database, so a
cell's world is fresh and cheap. Accounts are inserted directly with an unusable password hash: hashing a password
with Argon2 costs a tenth of a second, and only ``login`` needs one (``password_account``).

The roles, as the matrix uses them:

- ``ANON``: no Authorization header.
- ``USER``: a signed-in user with no relation to anything in the world.
- ``AUTHOR``: the user who made the object under test (the example's author, the model's submitter, the proposer,
  the token's holder, the snapshot's maker, the webhook's registrant); where an operation acts on no one's object,
  an annotator of the task.
- ``OTHER``: another plain user who made an object of the same kind (their own example, model, proposal, webhook),
  but not the one under test: a peer, to show that taking part grants nothing over someone else's things.
- ``OWNER``: an owner of the task (granted through the service, as an admin would).
- ``ADMIN``: an admin account.
- ``REVOKED``: a token of the ADMIN account that was used (so the server has cached it), then revoked: the most
  powerful account, so any success with it means a revoked token still works.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from dynaforge.db.models import (
    AdversaryRun,
    Dataset,
    DatasetAccess,
    Evaluation,
    EvaluationStatus,
    Example,
    RegisteredModel,
    RegisteredModelOrigin,
    Round,
    TaskRow,
    User,
    WebhookDelivery,
    WebhookDeliveryStatus,
)
from dynaforge.services import auth as auth_service
from dynaforge.services import datasets as dataset_service
from dynaforge.services import declared_tasks
from dynaforge.services import examples as example_service
from dynaforge.services import leaderboard as board_service
from dynaforge.services import proposals as proposal_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services import validation as validation_service
from dynaforge.services import webhooks as webhook_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

ANON, USER, AUTHOR, OTHER, OWNER, ADMIN, REVOKED = "ANON", "USER", "AUTHOR", "OTHER", "OWNER", "ADMIN", "REVOKED"
ROLES = (ANON, USER, AUTHOR, OTHER, OWNER, ADMIN, REVOKED)
#: The roles with an account of their own (REVOKED holds a token of ADMIN's account).
ACCOUNTS = (USER, AUTHOR, OTHER, OWNER, ADMIN)

TASK = "toy"
SYSTEM = Actor.system()
KEYWORD = {"callable": "toy_plugin:keyword_model"}
#: The toy model says "bad" unless the text holds the word "good": labelled "good", this text fools it.
FOOLING = {"text": "a fine sunny day", "label": "good"}
PASSWORD = "correct horse battery"
#: Where the world's webhooks point: loopback is allowed outside production, and nothing is sent (no job system).
HOOK_URL = "http://127.0.0.1:9/hook"
#: The error of the world's models' failed evaluations: only their submitter, the owners and admins may read it.
EVAL_ERROR = "RuntimeError: at /srv/models/secret"


def declaration(code: str, name: str) -> dict[str, Any]:
    """A small task declared as data (declareTask), its target on a model server that is never called."""
    return {
        "code": code,
        "name": name,
        "instructions": "Write a short text and say whether it is good or bad; the model reads only some words, "
        "so a text that praises without them fools it.",
        "labels": ["good", "bad"],
        "fields": [
            {"name": "text", "type": "text", "role": "input", "max_length": 100},
            {"name": "label", "type": "choice", "role": "target"},
        ],
        "target_models": [{"name": "remote", "backend": "http", "config": {"url": "https://models.example.org/x"}}],
        "sample_examples": [{"text": "a good day", "label": "good"}, {"text": "a grey day", "label": "bad"}],
    }


class World:
    """One cell's world. ``actors`` holds an Actor per account role; objects are made (once) when first asked for."""

    def __init__(self, p: Platform, actors: dict[str, Actor]):
        self.p = p
        self.actors = actors
        self._tokens: dict[str, str | None] = {ANON: None}
        self.made: dict[str, Any] = {}
        #: How many examples each account wrote (what myStats must report to it).
        self.written: dict[str, int] = {role: 0 for role in ACCOUNTS}

    @classmethod
    async def create(cls, p: Platform) -> World:
        async with p.db.write() as s:
            users = {
                role: User(
                    username=f"{role.lower()}1",
                    email=f"{role.lower()}1@example.org",
                    password_hash="!",
                    is_admin=role == ADMIN,
                )
                for role in ACCOUNTS
            }
            s.add_all(users.values())
        actors = {role: Actor(u.id, u.username, u.is_admin) for role, u in users.items()}
        await task_service.grant_ownership(p, SYSTEM, TASK, actors[OWNER].user_id)
        return cls(p, actors)

    def username(self, role: str) -> str | None:
        """The account a role acts as (REVOKED: the admin's, although the server must not accept it)."""
        actor = self.actors.get(ADMIN if role == REVOKED else role)
        return None if actor is None else actor.username

    async def token(self, role: str) -> str | None:
        """The bearer token a role sends (None: no header)."""
        if role not in self._tokens:
            if role == REVOKED:
                admin = self.actors[ADMIN]
                row, token = await auth_service.create_token(self.p, admin, name="soon revoked")
                assert await auth_service.authenticate(self.p, token) == admin  # valid, and now cached
                await auth_service.revoke_token(self.p, admin, row.id)
                assert (await auth_service.authenticate(self.p, token)).is_anonymous
            else:
                _, token = await auth_service.create_token(self.p, self.actors[role], name="matrix")
            self._tokens[role] = token
        return self._tokens[role]

    async def _once(self, key: str, make):
        if key not in self.made:
            self.made[key] = await make()
        return self.made[key]

    # ------------------------------------------------------------------ accounts

    async def account(self, name: str) -> Actor:
        """An extra plain account (a user to grant ownership to, say); it plays no role."""

        async def make():
            async with self.p.db.write() as s:
                user = User(username=name, email=f"{name}@example.org", password_hash="!")
                s.add(user)
            return Actor(user.id, user.username, False)

        return await self._once(f"account:{name}", make)

    async def password_account(self) -> tuple[str, str]:
        """An account with a real password (for login): its username and password."""

        async def make():
            user = await auth_service.create_user(
                self.p, SYSTEM, username="keyholder", email="keyholder@example.org", password=PASSWORD
            )
            return user.username, PASSWORD

        return await self._once("password_account", make)

    async def coowner(self) -> Actor:
        """A second owner of the task (whose ownership can be revoked)."""

        async def make():
            actor = await self.account("coowner1")
            await task_service.grant_ownership(self.p, SYSTEM, TASK, actor.user_id)
            return actor

        return await self._once("coowner", make)

    async def authors_token_id(self) -> int:
        """The id of a second API token of AUTHOR's (to revoke)."""

        async def make():
            row, _ = await auth_service.create_token(self.p, self.actors[AUTHOR], name="spare")
            return row.id

        return await self._once("authors_token", make)

    # ------------------------------------------------------------------ examples

    async def _write(self, role: str, fields: dict[str, Any]) -> int:
        outcome = await example_service.submit(self.p, self.actors[role], task_code=TASK, fields=dict(fields))
        assert outcome.pending_reason is None, outcome.pending_reason
        self.written[role] += 1
        return outcome.example.id

    async def example(self) -> int:
        """AUTHOR's example, which fooled the model and awaits validation (CREATED); OTHER wrote one too."""

        async def make():
            mine = await self._write(AUTHOR, FOOLING)
            self.made["others_example"] = await self._write(OTHER, {"text": "grey skies again", "label": "good"})
            return mine

        return await self._once("example", make)

    async def correction(self) -> int:
        """An extra validator's INCORRECT vote with a corrected target on AUTHOR's example (the vote's id)."""

        async def make():
            example_id = await self.example()
            validator = await self.account("corrector")
            await validation_service.validate(
                self.p, validator, example_id, "INCORRECT", corrected_target={"label": "good"}, reason="it praises"
            )
            async with self.p.db.session() as s:
                from sqlalchemy import select

                from dynaforge.db.models import Validation

                return await s.scalar(
                    select(Validation.id).where(
                        Validation.example_id == example_id, Validation.user_id == validator.user_id
                    )
                )

        return await self._once("correction", make)

    async def plain_example(self) -> int:
        """AUTHOR's example that did not fool the model (CREATED): the toy task validates only fooling examples, so
        it never reaches the crowd's queue."""

        async def make():
            return await self._write(AUTHOR, {"text": "a good day", "label": "good"})

        return await self._once("plain_example", make)

    async def others_example(self) -> int:
        await self.example()
        return self.made["others_example"]

    async def accepted_examples(self) -> list[int]:
        """Three of AUTHOR's examples in round 1, accepted by an owner's vote (for createRoundDatasets)."""

        async def make():
            ids = []
            for i in range(3):
                example_id = await self._write(AUTHOR, {"text": f"good news {i}", "label": "good"})
                await validation_service.validate(self.p, self.actors[OWNER], example_id, "CORRECT")
                ids.append(example_id)
            return ids

        return await self._once("accepted", make)

    # ------------------------------------------------------------------ data sets, models, leaderboard

    async def datasets(self) -> dict[str, Any]:
        """A SCORING, a STANDARD and a HIDDEN data set of three items each (made by the operator), by access."""

        async def make():
            records = [
                (f"line {i + 1}", {"text": f"{word} day", "label": label})
                for i, (word, label) in enumerate([("good", "good"), ("bad", "bad"), ("dull", "bad")])
            ]
            made = {}
            for access in (DatasetAccess.SCORING, DatasetAccess.STANDARD, DatasetAccess.HIDDEN):
                rows = await dataset_service.create_dataset(
                    self.p, SYSTEM, TASK, f"bench-{access.lower()}", list(records), access=access
                )
                made[access] = rows[0]
            return made

        return await self._once("datasets", make)

    async def model(self, *, published: bool = False) -> int:
        """AUTHOR's model (unpublished, or published anonymously), with a backend configuration and a failed
        evaluation (its error and log tail) that only its submitter, the owners and admins may read; OTHER submitted
        one too. The data sets are made first, so that the models have evaluations."""

        async def make():
            await self.datasets()
            row, queued = await submission_service.submit_model(
                self.p,
                self.actors[AUTHOR],
                task_code=TASK,
                name="authors-model",
                backend="python",
                config=KEYWORD,
                published=published,
                anonymous=published,
            )
            assert queued, "the model should be queued on the scoring set"
            async with self.p.db.write() as s:
                for evaluation in queued:
                    stored = await s.get(Evaluation, evaluation.id)
                    stored.status = EvaluationStatus.FAILED
                    stored.error, stored.log_tail = EVAL_ERROR, "Traceback ..."
            await submission_service.submit_model(
                self.p,
                self.actors[OTHER],
                task_code=TASK,
                name="others-model",
                backend="python",
                config=KEYWORD,
                published=published,
            )
            return row.id

        return await self._once(f"model:{published}", make)

    async def snapshot(self) -> int:
        """A leaderboard snapshot AUTHOR took."""

        async def make():
            row = await board_service.snapshot(
                self.p, self.actors[AUTHOR], TASK, "authors-snapshot", metric_weights=None, dataset_weights=None
            )
            return row.id

        return await self._once("snapshot", make)

    async def fork(self) -> int:
        """A leaderboard fork AUTHOR saved."""

        async def make():
            row = await board_service.save_fork(
                self.p, self.actors[AUTHOR], TASK, "authors-fork", metric_weights=None, dataset_weights=None
            )
            return row.id

        return await self._once("fork", make)

    # ------------------------------------------------------------------ webhooks

    async def training_job(self) -> int:
        """A queued training job of the task on its SCORING set, asked for by an admin."""

        async def make():
            sets = await self.datasets()
            job = await training_service.train_candidate(
                self.p, self.actors[ADMIN], task_code=TASK, dataset_ids=[sets[DatasetAccess.SCORING].id]
            )
            return job.id

        return await self._once("training_job", make)

    async def adversary_run(self) -> int:
        """A finished generation run of the task (a row only: no background work outlives the cell)."""

        async def make():
            round_ = await task_service.get_round(self.p, (await task_service.get_task(self.p, SYSTEM, TASK)).row.id)
            async with self.p.db.write() as s:
                run = AdversaryRun(
                    task_id=round_.task_id, round_id=round_.id, adversary="toy-synonyms", budget=5, status="DONE"
                )
                s.add(run)
                await s.flush()
                return run.id

        return await self._once("adversary_run", make)

    async def candidate(self) -> int:
        """A registered candidate of the training job, as a finished job leaves it (test_training runs real ones)."""

        async def make():
            job_id = await self.training_job()
            async with self.p.db.write() as s:
                row = RegisteredModel(
                    task_id=(await s.scalar(select(TaskRow.id).where(TaskRow.code == TASK))),
                    name="words",
                    backend="python",
                    config={"factory": "toy_plugin:load_words"},
                    spec_sha256="0" * 64,
                    origin=RegisteredModelOrigin.TRAINED,
                    recipe="words",
                    training_job_id=job_id,
                )
                s.add(row)
                await s.flush()
                return row.id

        return await self._once("candidate", make)

    async def webhook(self) -> int:
        """AUTHOR's webhook on the task; OTHER registered one too."""

        async def make():
            mine = await webhook_service.create(
                self.p, self.actors[AUTHOR], TASK, HOOK_URL, ["modelFooled"], description="author's"
            )
            others = await webhook_service.create(
                self.p, self.actors[OTHER], TASK, HOOK_URL, ["exampleCreated"], description="other's"
            )
            self.made["others_webhook"] = others.webhook.id
            return mine.webhook.id

        return await self._once("webhook", make)

    async def others_webhook(self) -> int:
        await self.webhook()
        return self.made["others_webhook"]

    async def failed_delivery(self) -> str:
        """A FAILED delivery of AUTHOR's webhook (a row, as the job leaves one after its last attempt): its message
        id."""

        async def make():
            webhook_id = await self.webhook()
            async with self.p.db.write() as s:
                row = WebhookDelivery(
                    webhook_id=webhook_id,
                    message_id="msg_authz_failed",
                    event="modelFooled",
                    body="{}",
                    status=WebhookDeliveryStatus.FAILED,
                    attempts=8,
                    error="HTTP 500",
                )
                s.add(row)
            return row.message_id

        return await self._once("failed_delivery", make)

    # ------------------------------------------------------------------ events (as the services publish them)

    async def declared_task(self) -> str:
        """A task declared as data by an admin (code ``declared-old``)."""

        async def make():
            view = await declared_tasks.create(self.p, SYSTEM, declaration("declared-old", "Declared"))
            return view.task.code

        return await self._once("declared_task", make)

    async def example_event(self) -> dict[str, Any]:
        """AUTHOR's fooling example (``example``) as events carry it (services.examples.event_payload)."""
        example_id = await self.example()
        async with self.p.db.session() as s:
            row = await s.get(Example, example_id)
            number = await s.scalar(select(Round.number).where(Round.id == row.round_id))
        return example_service.event_payload(row, TASK, number)

    async def round_event(self, change: str = "UPDATED") -> dict[str, Any]:
        """A roundChanged payload for the task's current round (as services.announce.round_changed makes it)."""
        async with self.p.db.session() as s:
            row = await s.scalar(
                select(Round)
                .join(TaskRow, TaskRow.id == Round.task_id)
                .where(TaskRow.code == TASK)
                .order_by(Round.number.desc())
                .limit(1)
            )
        return {
            "task_code": TASK,
            "task_id": row.task_id,
            "round_id": row.id,
            "number": row.number,
            "change": change,
            "at": "2024-01-01T00:00:00+00:00",
        }

    async def progress_event(self, *, published: bool = False) -> dict[str, Any]:
        """An evaluationProgress payload of AUTHOR's model (``model``): its evaluation failed with ``EVAL_ERROR``
        (as services.evaluation_runner.Runner.report sends it)."""
        model_id = await self.model(published=published)
        async with self.p.db.session() as s:
            evaluation, dataset = (
                await s.execute(
                    select(Evaluation, Dataset)
                    .join(Dataset, Dataset.id == Evaluation.dataset_id)
                    .where(Evaluation.model_id == model_id)
                    .order_by(Evaluation.id)
                    .limit(1)
                )
            ).one()
        return {
            "evaluation_id": evaluation.id,
            "model_id": model_id,
            "dataset_id": dataset.id,
            "dataset_name": dataset.name,
            "status": EvaluationStatus.FAILED,
            "progress": 0.5,
            "error": EVAL_ERROR,
        }

    # ------------------------------------------------------------------ proposals, task state

    async def proposal(self) -> int:
        """AUTHOR's pending task proposal; OTHER proposed another task."""

        async def make():
            row = await proposal_service.propose(self.p, self.actors[AUTHOR], code="authors_task", name="Author's task")
            await proposal_service.propose(self.p, self.actors[OTHER], code="others_task", name="Other's task")
            return row.id

        return await self._once("proposal", make)

    async def hide_task(self) -> None:
        """Make the toy task hidden: only its owners and admins may see it."""

        async def make():
            await task_service.update_settings(self.p, SYSTEM, TASK, {"hidden": True})
            return True

        await self._once("hidden", make)


def multipart(query: str, variables: dict[str, Any], path: str, filename: str, content: bytes) -> dict[str, Any]:
    """The parts of a GraphQL multipart request (operations, map, the file), as apollo-upload-client sends it;
    ``path`` is where the file goes in the variables, e.g. ``input.file``."""
    return {
        "data": {
            "operations": json.dumps({"query": query, "variables": variables}),
            "map": json.dumps({"0": [f"variables.{path}"]}),
        },
        "files": {"0": (filename, content, "application/octet-stream")},
    }
