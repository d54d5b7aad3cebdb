"""The authorisation matrix: every mutation, subscription and sensitive query of the schema, run as each role (over
HTTP; subscriptions over a websocket).

How it is organised:

- ``RULES`` is the table: one row per operation (a schema field name, or ``name@variant`` for the same operation in
  another situation, such as a hidden task), one column per role (``authz_world.ROLES``), each cell the outcome
  expected. The outcomes are read off the services' checks (``require_user``, ``require_human``, ``is_owner``,
  ``is_admin``, the visibility of hidden tasks), not recorded from what the server answers. A cell whose
  expectation the server does not meet today is ``bug(expected, reason)`` (named ``XF_*`` above the table): it
  runs as a strict xfail, so the fix makes it fail ("XPASS(strict)") until the cell becomes the plain outcome.
- ``OPERATIONS`` (keyed exactly like ``RULES``) says how to run each row: how to build its variables in a fresh
  ``World`` (authz_world.py), the query document (mutations get one generated from the schema, selecting
  ``__typename``), how to read the outcome from the answer, and the file of a multipart upload.
- ``PUBLIC_QUERIES`` names the queries that need no row, each with the reason.

``test_rules_cover_the_schema`` enumerates the built schema: every Mutation (and Subscription) field needs a row,
and every Query field a row or a PUBLIC_QUERIES entry; a row for an operation that no longer exists fails too.
To add an operation: add its row to RULES (all seven roles), its builder to OPERATIONS with ``@operation("name")``
(and a ``classify`` for a query: what counts as the full view, the redacted one, not found), and, if it acts on a
new kind of object, a maker in ``World``. A subscription's row also names its ``event``: the bus topic and the
payload a service would publish (made from the world's real rows). Its cells run over graphql-transport-ws against
one loopback uvicorn server per module (``Relay``, pointed at each cell's app; the in-process HTTP transport speaks
no websockets), the token in ``connection_init``: once the subscription listens on the bus, ``subscribe`` publishes
the event and reads the first message, which is classified like a query's answer (an error's code, or what the
role received of the event).

Each cell gets a fresh world (the test's database is rolled back afterwards), so a success in one cell never
changes another's outcome.

The outcomes: for mutations, ``ok`` (any member of the result union that is not an Error) or the Error member's
``__typename``; for queries, a top-level error's code as the same names (``NotAuthenticated``, ``Forbidden``,
``NotFound``), ``NotFound`` also for a null or missing object the role may not see, and, where a role sees a
different view of the same thing, ``full`` (the owners' view: configurations, gold targets, hidden sets) or
``public`` (the redacted one: also for events, such as an evaluation's error that only the privileged receive),
``all``/``own``/``none`` for lists filtered by who wrote what (``none`` also for a subscription that withholds
the event from the role: ``subscribe`` then publishes a sentinel, the role's own copy of the event, and the
sentinel arriving first means the event was withheld), ``null`` for ``me`` and an empty queue. A classifier
answers ``leak: ...`` or ``inconsistent: ...`` for an answer that fits no view.
"""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import websockets
from authz_world import (
    ADMIN,
    ANON,
    AUTHOR,
    FOOLING,
    HOOK_URL,
    KEYWORD,
    OTHER,
    OWNER,
    REVOKED,
    ROLES,
    TASK,
    World,
    declaration,
    multipart,
)
from graphql import (
    ArgumentNode,
    DocumentNode,
    FieldNode,
    GraphQLUnionType,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    parse,
    print_ast,
)
from model_archives import MINIMAL_ARCHIVE
from sqlalchemy import select, update
from support import gid

from dynaforge.api.schema import build_schema
from dynaforge.app import create_app
from dynaforge.db.models import DatasetAccess, Evaluation, EvaluationStatus, TaskRow

pytestmark = pytest.mark.authz

#: A 2×2 PNG, for uploadMedia (the decoder takes it: a real image).
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000000b49444154789c6360400600000e"
    "0001a99173b10000000049454e44ae426082"
)

OK = "ok"
NOAUTH = "NotAuthenticated"
FORBIDDEN = "Forbidden"
NOTFOUND = "NotFound"
INVALID = "InvalidInput"
FULL = "full"
PUBLIC = "public"
ALL, OWN, NONE = "all", "own", "none"
NULL = "null"


@dataclass(frozen=True)
class Bug:
    """A cell where the server does not do what it should (today): ``expected`` is the right outcome."""

    expected: str
    reason: str


def bug(expected: str, reason: str) -> Bug:
    return Bug(expected, reason)


def rule(*outcomes: str | Bug) -> dict[str, str | Bug]:
    """One row of the table, in the order of ROLES."""
    assert len(outcomes) == len(ROLES), outcomes
    return dict(zip(ROLES, outcomes, strict=False))


# The cells the server gets wrong today (strict xfails), by the outcome they should have.
# (Fixed since the matrix was written: data sets of a hidden task served to anyone with their id; python-backend
# submissions, code the worker runs, open to any user; subscriptions refusing a revoked token without the
# NOT_AUTHENTICATED code. Decided as intended: flagging a CREATED example that never reaches one's validation queue.)
# None is open now; write a cell as bug(expected, reason) to record one.

# Reasons for queries that need no row: they read no object whose visibility depends on who asks.
PUBLIC_QUERIES: dict[str, str] = {
    "plugins": "the loaded plugins and their load errors: server facts, the same for every caller",
    "backends": "the registered model backends and their configuration schemas: server facts",
    "metrics": "the registered metrics: server facts, the same for every caller",
    "perturbations": "the registered perturbations: server facts, the same for every caller",
    "exportFormats": "the registered export formats: server facts, the same for every caller",
    "declaredTaskSchema": "the JSON Schema of a declared task: a published document, the same for every caller",
    "crowdPlatforms": "the registered crowd platforms: server facts, the same for every caller",
}

# fmt: off
RULES: dict[str, dict[str, str | Bug]] = {
    #                                      ANON      USER       AUTHOR     OTHER      OWNER      ADMIN REVOKED
    # --- accounts and tokens
    "register":                       rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "login":                          rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "createApiToken":                 rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "revokeApiToken":                 rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  NOTFOUND,  OK,   NOAUTH),
    # --- running the accounts (admins)
    "users":                          rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "setUserAdmin":                   rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "setUserActive":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "logout":                         rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "revokeAllApiTokens":             rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "me":                             rule(NULL,     OK,        OK,        OK,        OK,        OK,   NULL),
    # --- writing examples
    "createExample":                  rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "createExample@hiddenTask":       rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "retractExample":                 rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, OK,        OK,   NOAUTH),
    # the world's task decides by its rule: an owner passes the authorisation and meets the state (no judge's verdict)
    "overruleVerdict":                rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, "Conflict", "Conflict", NOAUTH),
    "nextContext":                    rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "nextContext@hiddenTask":         rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOTFOUND),
    "example":                        rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, OK,        OK,   NOAUTH),
    "user":                           rule(NOTFOUND, OK,        OK,        OK,        OK,        OK,   NOTFOUND),
    "updateContext":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "deleteContext":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "importExamples":                 rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "importDataset":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "applyCorrection":                rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "contexts":                       rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "node":                           rule(NOTFOUND, NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOTFOUND),
    "node@webhook":                   rule(NOTFOUND, NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOTFOUND),
    "nodes":                          rule(NOTFOUND, NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOTFOUND),
    "examples":                       rule(NOAUTH,   NONE,      OWN,       OWN,       ALL,       ALL,  NOAUTH),
    "myStats":                        rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    # --- validation
    "validateExample":                rule(NOAUTH,   OK,        FORBIDDEN, OK,        OK,        OK,   NOAUTH),
    "validateExample@hiddenTask":     rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "validateExample@notFooled":      rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "flagExample":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "flagExample@notFooled":          rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "exampleToValidate":              rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "exampleToValidate@ownerMode":    rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    # skipExample: only an example of one's queue (the answer shows its gold), so never one's own
    "skipExample":                    rule(NOAUTH,   OK,        FORBIDDEN, OK,        OK,        OK,   NOAUTH),
    "skipExample@hiddenTask":         rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "validationQueueSize":            rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "validationQueueSize@ownerMode":  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "setValidatorWeights":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "addTutorialItem":                rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "removeTutorialItem":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    # practice is anyone's (signed in): never a vote
    "answerTutorial":                 rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "restartTutorial":                rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    # nobody but its validator withdraws a vote (the world's example has none of the roles' votes)
    "withdrawValidation":             rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  NOTFOUND,  NOTFOUND, NOAUTH),
    # --- crowd studies: owners run them; anyone with a study link joins; only participants complete
    "createCrowdStudy":               rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "setCrowdStudyOpen":              rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    # owners pass the authorisation and meet the state: nobody in the world's study is owed anything
    "payCrowdBonuses":                rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, INVALID,   INVALID, NOAUTH),
    "recordCrowdBonuses":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, INVALID,   INVALID, NOAUTH),
    "joinCrowdStudy":                 rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "completeCrowdStudy":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, NOAUTH),
    # none of the roles joined through a study
    "crowdParticipation":             rule(NULL,     NULL,      NULL,      NULL,      NULL,      NULL, NULL),
    # --- tasks, rounds, contexts (owners and admins)
    "tasks":                          rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "tasks@hiddenTask":               rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOTFOUND),
    "task":                           rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, PUBLIC),
    "task@hiddenTask":                rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "round":                          rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, PUBLIC),
    "round@hiddenTask":               rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "addContexts":                    rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "uploadContexts":                 rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "setTargetModels":                rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "openNextRound":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "trainingRecipes":                rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "registeredModels":               rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, PUBLIC),
    "registeredModels@hiddenTask":    rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "trainingJobs":                   rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "roundModelMatrix":               rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "trainCandidateModel":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "evaluateRoundTargets":           rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "cancelTraining":                 rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    # --- machine adversaries
    "adversaries":                    rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "adversaries@hiddenTask":         rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOTFOUND),
    "suggestEdits":                   rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "suggestEdits@hiddenTask":        rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "generateCandidates":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "cancelGeneration":               rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "adversaryRuns":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "trainingProgress":               rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOAUTH),
    "closeRound":                     rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "updateRound":                    rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "updateTaskSettings":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    # --- ownership and proposals (admins)
    "grantTaskOwnership":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    # declared tasks run target models of the declaration's choosing: admins only, as the python backend
    "declareTask":                    rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "updateDeclaredTask":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "revokeTaskOwnership":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "proposeTask":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "decideTaskProposal":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "taskProposals":                  rule(NOAUTH,   NONE,      OWN,       OWN,       NONE,      ALL,  NOAUTH),
    # --- data sets
    "datasets":                       rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, PUBLIC),
    "datasets@hiddenTask":            rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "datasetItems":                   rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, PUBLIC),
    "datasetItems@standardSet":       rule(FULL,     FULL,      FULL,      FULL,      FULL,      FULL, FULL),
    "datasetItems@hiddenSet":         rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "datasetItems@hiddenTask":        rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "createRoundDatasets":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "uploadPerturbedCopy":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "updateDataset":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "updateDataset@hidden":           rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "deleteDataset":                  rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "deleteDataset@hidden":           rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    # --- models and leaderboards
    "submitModel":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "submitModel@importPath":         rule(NOAUTH,   INVALID,   INVALID,   INVALID,   INVALID,   OK,   NOAUTH),
    "uploadMedia":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "uploadModel":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "uploadModel@hiddenTask":         rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "submitPredictions":              rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "submitPredictions@hiddenSet":    rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "submitSelection":                rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    # a HIDDEN set is no pool: those who can see it are told so, the others that there is no such set
    "submitSelection@hiddenSet":      rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  INVALID,   INVALID, NOAUTH),
    "model":                          rule(NOTFOUND, NOTFOUND,  FULL,      NOTFOUND,  FULL,      FULL, NOTFOUND),
    "model@published":                rule(PUBLIC,   PUBLIC,    FULL,      PUBLIC,    FULL,      FULL, PUBLIC),
    "model@hiddenTask":               rule(NOTFOUND, NOTFOUND,  FULL,      NOTFOUND,  FULL,      FULL, NOTFOUND),
    "models":                         rule(NONE,     NONE,      FULL,      NONE,      FULL,      FULL, NONE),
    "models@published":               rule(PUBLIC,   PUBLIC,    FULL,      PUBLIC,    FULL,      FULL, PUBLIC),
    "models@hiddenTask":              rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOTFOUND),
    "updateModel":                    rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  FORBIDDEN, OK,   NOAUTH),
    "updateModel@published":          rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "deleteModel":                    rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  FORBIDDEN, OK,   NOAUTH),
    "deleteModel@published":          rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "leaderboard":                    rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "leaderboard@hiddenTask":         rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOTFOUND),
    "saveLeaderboardFork":            rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "snapshotLeaderboard":            rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "leaderboardSnapshot":            rule(OK,       OK,        OK,        OK,        OK,        OK,   OK),
    "leaderboardSnapshot@hiddenTask": rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOTFOUND),
    "myLeaderboardForks":             rule(NOAUTH,   NONE,      OWN,       NONE,      NONE,      NONE, NOAUTH),
    "myLeaderboardSnapshots":         rule(NOAUTH,   NONE,      OWN,       NONE,      NONE,      NONE, NOAUTH),
    "deleteLeaderboardFork":          rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    "deleteLeaderboardFork@hiddenTask": rule(NOAUTH, NOTFOUND,  OK,        NOTFOUND,  FORBIDDEN, OK,   NOAUTH),
    "deleteLeaderboardSnapshot":      rule(NOAUTH,   FORBIDDEN, OK,        FORBIDDEN, FORBIDDEN, OK,   NOAUTH),
    # --- webhooks (signed-in humans; a webhook: its registrant, the task's owners and admins)
    "createWebhook":                  rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "createWebhook@hiddenTask":       rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    # rotateWebhookSecret: only the registrant, since the secret signs what their receiver trusts
    "rotateWebhookSecret":            rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  NOTFOUND,  NOTFOUND, NOAUTH),
    "deleteWebhook":                  rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOAUTH),
    "redeliverWebhook":               rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOAUTH),
    "updateWebhook":                  rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  FORBIDDEN, FORBIDDEN, NOAUTH),
    "updateWebhook@pause":            rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOAUTH),
    "deleteWebhook@hiddenTask":       rule(NOAUTH,   NOTFOUND,  OK,        NOTFOUND,  OK,        OK,   NOAUTH),
    "webhooks":                       rule(NOAUTH,   NONE,      OWN,       OWN,       ALL,       ALL,  NOAUTH),
    "webhooks@hiddenTask":            rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  ALL,       ALL,  NOAUTH),
    # --- live events (graphql-transport-ws; a bad or revoked token is refused, not taken as anonymous)
    # modelFooled: someone else's example never (that it fooled the target tells a two-class task's gold)
    "modelFooled":                    rule(NOAUTH,   NONE,      OK,        NONE,      OK,        OK,   NOAUTH),
    "modelFooled@hiddenTask":         rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "modelFooled@after":              rule(NOAUTH,   NONE,      OK,        NONE,      OK,        OK,   NOAUTH),
    "exampleCreated":                 rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "exampleCreated@hiddenTask":      rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "examplePredicted":               rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "examplePredicted@hiddenTask":    rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "verdictDecided":                 rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "verdictDecided@hiddenTask":      rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "exampleValidated":               rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "exampleValidated@hiddenTask":    rule(NOAUTH,   NOTFOUND,  NOTFOUND,  NOTFOUND,  OK,        OK,   NOAUTH),
    "roundChanged":                   rule(PUBLIC,   PUBLIC,    PUBLIC,    PUBLIC,    FULL,      FULL, NOAUTH),
    "roundChanged@hiddenTask":        rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOAUTH),
    # replyStream: a signed-in person's own stream (the topic names them; others' pieces never reach it: e2e test)
    "replyStream":                    rule(NOAUTH,   OK,        OK,        OK,        OK,        OK,   NOAUTH),
    "evaluationProgress":             rule(NOTFOUND, NOTFOUND,  FULL,      NOTFOUND,  FULL,      FULL, NOAUTH),
    "evaluationProgress@published":   rule(PUBLIC,   PUBLIC,    FULL,      PUBLIC,    FULL,      FULL, NOAUTH),
    "evaluationProgress@hiddenTask":  rule(NOTFOUND, NOTFOUND,  FULL,      NOTFOUND,  FULL,      FULL, NOAUTH),
    "evaluationUpdated":              rule(PUBLIC,   PUBLIC,    FULL,      PUBLIC,    FULL,      FULL, NOAUTH),
    "evaluationUpdated@hiddenTask":   rule(NOTFOUND, NOTFOUND,  NOTFOUND,  NOTFOUND,  FULL,      FULL, NOAUTH),
    "trainingJobUpdated":             rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
    "adversaryRunUpdated":            rule(NOAUTH,   FORBIDDEN, FORBIDDEN, FORBIDDEN, OK,        OK,   NOAUTH),
}
# fmt: on


# --------------------------------------------------------------------------- how each row runs

Variables = dict[str, Any]
Classify = Callable[[Any, "Seen"], str]


@dataclass(frozen=True)
class Seen:
    """What a classifier knows besides the answer: the world and the role that asked."""

    world: World
    role: str

    @property
    def viewer(self) -> str | None:
        """The username the server should see (None for ANON and for the revoked token)."""
        return None if self.role in (ANON, REVOKED) else self.world.username(self.role)


#: A subscription row's event: the bus topic and the payload a service would publish there (made in the world).
Event = Callable[[World], Awaitable[tuple[str, dict[str, Any]]]]


@dataclass
class Operation:
    build: Callable[[World], Awaitable[Variables]]
    document: str | None = None  # None: a mutation's, generated from the schema
    classify: Classify | None = None  # None: a mutation's __typename
    upload: tuple[str, str, bytes] | None = None  # (where in the variables, file name, content)
    field_name: str = ""
    event: Event | None = None  # subscriptions: what to publish once the subscription listens
    # subscriptions: how many more events follow the first one; they are read before the subscription completes, so
    # the server is never cut short mid-query (that closes the database connection the whole test runs on)
    then: int = 0
    # where the answer is under data: (field_name,) for a root field, ("task", name) for a Task field
    path: tuple[str, ...] = ()


OPERATIONS: dict[str, Operation] = {}


def operation(
    key: str,
    *,
    document: str | None = None,
    classify: Classify | None = None,
    upload: tuple[str, str, bytes] | None = None,
    event: Event | None = None,
    then: int = 0,
):
    def register(build):
        assert key not in OPERATIONS, f"two builders for {key}"
        OPERATIONS[key] = Operation(build, document, classify, upload, key.split("@")[0], event, then)
        return build

    return register


def _input(**fields: Any) -> Variables:
    return {"input": fields}


# ---------------------------------------------------------------- accounts and tokens


@operation("register")
async def _register(w: World) -> Variables:
    return _input(username="newcomer", email="newcomer@example.org", password="correct horse battery")


@operation("login")
async def _login(w: World) -> Variables:
    username, password = await w.password_account()
    return _input(username=username, password=password)


@operation("createApiToken")
async def _create_api_token(w: World) -> Variables:
    return _input(name="another")


@operation("revokeApiToken")
async def _revoke_api_token(w: World) -> Variables:
    return _input(id=gid("ApiToken", await w.authors_token_id()))


@operation("logout")
async def _logout(w: World) -> Variables:
    return {}


@operation("revokeAllApiTokens")
async def _revoke_all_api_tokens(w: World) -> Variables:
    return {}


def _classify_me(value: Any, seen: Seen) -> str:
    if value is None:
        return NULL
    if value["username"] != seen.viewer:
        return f"leak: {value['username']} instead of {seen.viewer}"
    if value["email"] is None or not value["apiTokens"]["nodes"]:
        return f"inconsistent: own email or tokens missing: {value}"
    return OK


@operation("me", document="{ me { username email apiTokens { nodes { id } } } }", classify=_classify_me)
async def _me(w: World) -> Variables:
    return {}


# ---------------------------------------------------------------- writing examples


@operation("createExample")
async def _create_example(w: World) -> Variables:
    return _input(taskCode=TASK, fields=dict(FOOLING))


@operation("createExample@hiddenTask")
async def _create_example_hidden(w: World) -> Variables:
    await w.hide_task()
    return _input(taskCode=TASK, fields=dict(FOOLING))


@operation("retractExample")
async def _retract_example(w: World) -> Variables:
    return _input(id=gid("Example", await w.example()))


@operation("overruleVerdict")
async def _overrule_verdict(w: World) -> Variables:
    return _input(id=gid("Example", await w.example()), fooled=False, reason="The answer was right.")


def _found(value: Any, seen: Seen) -> str:
    return NOTFOUND if value is None else OK


NEXT_CONTEXT = "query($t: String!) { nextContext(taskCode: $t) { id fields } }"


@operation("nextContext", document=NEXT_CONTEXT, classify=_found)
async def _next_context(w: World) -> Variables:
    return {"t": TASK}


@operation("nextContext@hiddenTask", document=NEXT_CONTEXT, classify=_found)
async def _next_context_hidden(w: World) -> Variables:
    await w.hide_task()
    return {"t": TASK}


@operation("example", document="query($id: ID!) { example(id: $id) { id fields } }", classify=_found)
async def _example(w: World) -> Variables:
    return {"id": gid("Example", await w.example())}


def _classify_user(value: Any, seen: Seen) -> str:
    if value is None:
        return NOTFOUND
    may_read = seen.viewer == value["username"] or seen.role == ADMIN
    if value["email"] is not None and not may_read:
        return f"leak: {value['username']}'s email"
    return OK


@operation("user", document="query($u: String!) { user(username: $u) { id username email } }", classify=_classify_user)
async def _user(w: World) -> Variables:
    return {"u": w.username(AUTHOR)}


async def _a_context(w: World) -> str:
    from sqlalchemy import select

    from dynaforge.db.models import Context

    async with w.p.db.session() as s:
        return gid("Context", await s.scalar(select(Context.id).order_by(Context.id).limit(1)))


@operation("updateContext")
async def _update_context(w: World) -> Variables:
    return _input(id=await _a_context(w), tag="edited")


@operation("deleteContext")
async def _delete_context(w: World) -> Variables:
    return _input(id=await _a_context(w))


IMPORTED = (
    b'{"format": "dynaforge.example/1", "task": "toy", "status": "ACCEPTED", '
    b'"fields": {"text": "a", "label": "good"}}\n'
)


@operation("importExamples", upload=("input.file", "examples.jsonl", IMPORTED))
async def _import_examples(w: World) -> Variables:
    return _input(taskCode=TASK, file=None)


@operation("importDataset", upload=("input.file", "set.jsonl", IMPORTED))
async def _import_dataset(w: World) -> Variables:
    return _input(taskCode=TASK, name="imported", file=None, access="STANDARD")


@operation("applyCorrection")
async def _apply_correction(w: World) -> Variables:
    return _input(id=gid("Validation", await w.correction()))


@operation(
    "contexts",
    document="query($t: String!) { contexts(taskCode: $t) { totalCount nodes { id fields } } }",
    classify=_found,
)
async def _contexts(w: World) -> Variables:
    return {"t": TASK}


@operation("node", document="query($id: ID!) { node(id: $id) { id ... on Example { fields } } }", classify=_found)
async def _node(w: World) -> Variables:
    return {"id": gid("Example", await w.example())}


@operation("node@webhook", document="query($id: ID!) { node(id: $id) { id ... on Webhook { url } } }", classify=_found)
async def _node_webhook(w: World) -> Variables:
    return {"id": gid("Webhook", await w.webhook())}


def _found_all(value: Any, seen: Seen) -> str:
    if all(v is None for v in value):
        return NOTFOUND
    return OK if all(v is not None for v in value) else f"inconsistent: {value}"


@operation(
    "nodes",
    document="query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Example { fields } } }",
    classify=_found_all,
)
async def _nodes(w: World) -> Variables:
    return {"ids": [gid("Example", await w.example())] * 2}


def _which(seen_ids: set, by_role: dict[Any, str], role: str) -> str:
    """ALL, OWN (only the role's own and at least one), NONE, or a leak, for a list filtered by who made what."""
    own = {i for i, r in by_role.items() if r == role}
    if seen_ids == set(by_role):
        return ALL
    if not seen_ids:
        return NONE
    if seen_ids == own:
        return OWN
    return f"leak: saw {sorted(seen_ids)}, own {sorted(own)}"


async def _examples_by_role(w: World) -> dict[str, str]:
    return {gid("Example", await w.example()): AUTHOR, gid("Example", await w.others_example()): OTHER}


def _classify_examples(value: Any, seen: Seen) -> str:
    ids = {edge["node"]["id"] for edge in value["edges"]}
    return _which(ids, seen.world.made["examples_by_role"], seen.role)


@operation(
    "examples",
    document="query($t: String!) { examples(taskCode: $t) { edges { node { id } } } }",
    classify=_classify_examples,
)
async def _examples(w: World) -> Variables:
    w.made["examples_by_role"] = await _examples_by_role(w)
    return {"t": TASK}


def _classify_my_stats(value: Any, seen: Seen) -> str:
    written = seen.world.written.get(seen.role, 0)
    collected = value["total"]["collected"]
    return OK if collected == written else f"leak: counts {collected} examples, the role wrote {written}"


@operation(
    "myStats",
    document="query($t: String!) { myStats(taskCode: $t) { total { collected } } }",
    classify=_classify_my_stats,
)
async def _my_stats(w: World) -> Variables:
    await w.example()
    return {"t": TASK}


# ---------------------------------------------------------------- validation


@operation("validateExample")
async def _validate_example(w: World) -> Variables:
    return _input(id=gid("Example", await w.example()), label="CORRECT")


@operation("withdrawValidation")
async def _withdraw_validation(w: World) -> Variables:
    await w.correction()  # another account's vote on it: not the role's to withdraw
    return _input(id=gid("Example", await w.example()))


CROWD_STUDY = "5f00aa11bb22cc33dd44ee55"


async def _crowd_study(w: World) -> int:
    """OWNER's open Prolific study of the task."""
    from dynaforge.services import crowd as crowd_service

    async def make():
        study = await crowd_service.create_study(
            w.p,
            w.actors[OWNER],
            TASK,
            platform="prolific",
            external_id=CROWD_STUDY,
            name="A study",
            completion_code="C0DE",
            pay_per_verified_fooling=10,
        )
        return study.row.id

    return await w._once("crowd_study", make)


@operation("createCrowdStudy")
async def _create_crowd_study(w: World) -> Variables:
    return _input(taskCode=TASK, platform="prolific", externalId="6a00", name="Mine", completionCode="C1")


@operation("setCrowdStudyOpen")
async def _set_crowd_study_open(w: World) -> Variables:
    return _input(studyId=gid("CrowdStudy", await _crowd_study(w)), isOpen=False)


@operation("payCrowdBonuses")
async def _pay_crowd_bonuses(w: World) -> Variables:
    return _input(studyId=gid("CrowdStudy", await _crowd_study(w)))


@operation("recordCrowdBonuses")
async def _record_crowd_bonuses(w: World) -> Variables:
    return _input(
        studyId=gid("CrowdStudy", await _crowd_study(w)),
        reference="bulk-1",
        bonuses=[{"participant": "70bb", "amount": 5}],
    )


@operation("joinCrowdStudy")
async def _join_crowd_study(w: World) -> Variables:
    await _crowd_study(w)
    link = {"PROLIFIC_PID": "70bb", "STUDY_ID": CROWD_STUDY, "SESSION_ID": "s1"}
    return _input(platform="prolific", study=CROWD_STUDY, parameters=[{"name": k, "value": v} for k, v in link.items()])


@operation("completeCrowdStudy")
async def _complete_crowd_study(w: World) -> Variables:
    await _crowd_study(w)
    return {}


def _classify_participation(value: Any, seen: Seen) -> str:
    return NULL if value is None else f"leak: a participation for a role that joined nothing: {value}"


@operation("crowdParticipation", document="{ crowdParticipation { username } }", classify=_classify_participation)
async def _crowd_participation(w: World) -> Variables:
    await _crowd_study(w)
    return {}


async def _tutorial_item(w: World) -> int:
    """One of AUTHOR's accepted examples, put in the task's tutorial by OWNER."""
    from dynaforge.services import tutorial as tutorial_service

    example_id = (await w.accepted_examples())[0]
    await tutorial_service.add_item(w.p, w.actors[OWNER], example_id, None, "Read it as a careful reader would.")
    return example_id


@operation("addTutorialItem")
async def _add_tutorial_item(w: World) -> Variables:
    return _input(exampleId=gid("Example", (await w.accepted_examples())[0]), explanation="Why it is right.")


@operation("removeTutorialItem")
async def _remove_tutorial_item(w: World) -> Variables:
    return _input(exampleId=gid("Example", await _tutorial_item(w)))


@operation("answerTutorial")
async def _answer_tutorial(w: World) -> Variables:
    return _input(exampleId=gid("Example", await _tutorial_item(w)), label="CORRECT")


@operation("restartTutorial")
async def _restart_tutorial(w: World) -> Variables:
    return _input(taskCode=TASK)


@operation("setValidatorWeights")
async def _set_validator_weights(w: World) -> Variables:
    await w.correction()  # the corrector's INCORRECT vote: a crowd vote in the task
    return _input(taskCode=TASK, weights=[{"userId": gid("User", (await w.account("corrector")).user_id), "weight": 2}])


@operation("validateExample@hiddenTask")
async def _validate_example_hidden(w: World) -> Variables:
    example_id = await w.example()
    await w.hide_task()
    return _input(id=gid("Example", example_id), label="CORRECT")


@operation("validateExample@notFooled")
async def _validate_example_not_fooled(w: World) -> Variables:
    return _input(id=gid("Example", await w.plain_example()), label="CORRECT")


@operation("flagExample")
async def _flag_example(w: World) -> Variables:
    return _input(id=gid("Example", await w.example()), reason="it names a real person")


@operation("flagExample@notFooled")
async def _flag_example_not_fooled(w: World) -> Variables:
    return _input(id=gid("Example", await w.plain_example()), reason="it names a real person")


def _classify_to_validate(value: Any, seen: Seen) -> str:
    if value is None:
        return NULL
    if seen.world.made["examples_by_role"].get(value["id"]) == seen.role:
        return "inconsistent: handed the role its own example"
    return OK


TO_VALIDATE = "query($t: String!, $m: ValidationMode!) { exampleToValidate(taskCode: $t, mode: $m) { id } }"


@operation("exampleToValidate", document=TO_VALIDATE, classify=_classify_to_validate)
async def _example_to_validate(w: World) -> Variables:
    w.made["examples_by_role"] = await _examples_by_role(w)
    return {"t": TASK, "m": "CROWD"}


@operation("exampleToValidate@ownerMode", document=TO_VALIDATE, classify=_found)
async def _example_to_validate_owner(w: World) -> Variables:
    await w.example()
    return {"t": TASK, "m": "OWNER"}


@operation("skipExample")
async def _skip_example(w: World) -> Variables:
    return _input(id=gid("Example", await w.example()))


@operation("skipExample@hiddenTask")
async def _skip_example_hidden(w: World) -> Variables:
    example_id = await w.example()
    await w.hide_task()
    return _input(id=gid("Example", example_id))


def _classify_queue_size(value: Any, seen: Seen) -> str:
    return OK if isinstance(value, int) and value >= 0 else f"inconsistent: a queue of {value!r}"


QUEUE_SIZE = "query($t: String!, $m: ValidationMode!) { validationQueueSize(taskCode: $t, mode: $m) }"


@operation("validationQueueSize", document=QUEUE_SIZE, classify=_classify_queue_size)
async def _validation_queue_size(w: World) -> Variables:
    await w.example()
    return {"t": TASK, "m": "CROWD"}


@operation("validationQueueSize@ownerMode", document=QUEUE_SIZE, classify=_classify_queue_size)
async def _validation_queue_size_owner(w: World) -> Variables:
    await w.example()
    return {"t": TASK, "m": "OWNER"}


# ---------------------------------------------------------------- tasks, rounds, contexts


def _classify_tasks(value: Any, seen: Seen) -> str:
    return OK if TASK in {t["code"] for t in value} else NOTFOUND


@operation("tasks", document="{ tasks { code } }", classify=_classify_tasks)
async def _tasks(w: World) -> Variables:
    return {}


@operation("tasks@hiddenTask", document="{ tasks { code } }", classify=_classify_tasks)
async def _tasks_hidden(w: World) -> Variables:
    await w.hide_task()
    return {}


def _config_view(configs: list[Any], owner_flag: bool | None = None) -> str:
    """FULL when every target model's configuration shows (and the owner flag, if given, agrees), PUBLIC when none
    does (and the flag is false), else inconsistent."""
    if configs and all(c is not None for c in configs) and owner_flag in (None, True):
        return FULL
    if configs and all(c is None for c in configs) and owner_flag in (None, False):
        return PUBLIC
    return f"inconsistent: configs {configs}, viewerIsOwner {owner_flag}"


def _classify_task(value: Any, seen: Seen) -> str:
    if value is None:
        return NOTFOUND
    leaks = []
    for owner in value["owners"]:
        may_read = seen.viewer == owner["username"] or (seen.role == ADMIN)
        if owner["email"] is not None and not may_read:
            leaks.append(f"{owner['username']}'s email")
        if owner["apiTokens"]["nodes"] and not may_read:  # admins run the accounts: they list anyone's (never a secret)
            leaks.append(f"{owner['username']}'s API tokens")
    if leaks:
        return "leak: " + ", ".join(leaks)
    configs = [m["config"] for m in value["currentRound"]["targetModels"]]
    return _config_view(configs, value["viewerIsOwner"])


TASK_QUERY = """query($code: String!) { task(code: $code) {
  code viewerIsOwner currentRound { targetModels { name config } }
  owners { username email apiTokens { nodes { id } } } } }"""


@operation("task", document=TASK_QUERY, classify=_classify_task)
async def _task(w: World) -> Variables:
    await w.token(OWNER)  # the owner has a token, which only the owner and admins may list
    return {"code": TASK}


@operation("task@hiddenTask", document=TASK_QUERY, classify=_classify_task)
async def _task_hidden(w: World) -> Variables:
    await w.hide_task()
    return {"code": TASK}


def _classify_round(value: Any, seen: Seen) -> str:
    if value is None:
        return NOTFOUND
    return _config_view([m["config"] for m in value["targetModels"]])


ROUND_QUERY = (
    "query($t: String!) { round(taskCode: $t) { number targetModels { name config } "
    "leaderboard { nodes { username } } } }"
)


@operation("round", document=ROUND_QUERY, classify=_classify_round)
async def _round(w: World) -> Variables:
    return {"t": TASK}


@operation("round@hiddenTask", document=ROUND_QUERY, classify=_classify_round)
async def _round_hidden(w: World) -> Variables:
    await w.hide_task()
    return {"t": TASK}


@operation("addContexts")
async def _add_contexts(w: World) -> Variables:
    return _input(taskCode=TASK, contexts=[{"topic": "sport"}])


@operation("uploadContexts", upload=("input.file", "contexts.jsonl", b'{"topic": "sport"}\n{"topic": "music"}\n'))
async def _upload_contexts(w: World) -> Variables:
    return _input(taskCode=TASK, file=None)


@operation("setTargetModels")
async def _set_target_models(w: World) -> Variables:
    return _input(taskCode=TASK, models=[{"name": "keyword-2", "backend": "python", "config": KEYWORD}])


@operation("openNextRound")
async def _open_next_round(w: World) -> Variables:
    return _input(taskCode=TASK, description="Round two")


# ---------------------------------------------------------------- retraining (the model registry, training jobs)

RECIPES = "query($t: String!) { trainingRecipes(taskCode: $t) { name model hyperparameters } }"


def _classify_recipes(value: Any, seen: Seen) -> str:
    return OK if [r["name"] for r in value] == ["words"] else f"inconsistent: {value}"


@operation("trainingRecipes", document=RECIPES, classify=_classify_recipes)
async def _training_recipes(w: World) -> Variables:
    return {"t": TASK}


REGISTERED = "query($t: String!) { registeredModels(taskCode: $t) { name origin rounds } }"


def _classify_registered(value: Any, seen: Seen) -> str:
    """The round's target is public; the candidate a training job registered is for owners and admins."""
    names = sorted(r["name"] for r in value)
    if names == ["keyword"]:
        return PUBLIC
    return FULL if names == ["keyword", "words"] else f"inconsistent: {names}"


async def _registered_candidate(w: World) -> None:
    await w.candidate()


@operation("registeredModels", document=REGISTERED, classify=_classify_registered)
async def _registered_models(w: World) -> Variables:
    await _registered_candidate(w)
    return {"t": TASK}


@operation("registeredModels@hiddenTask", document=REGISTERED, classify=_classify_registered)
async def _registered_models_hidden(w: World) -> Variables:
    await _registered_candidate(w)
    await w.hide_task()
    return {"t": TASK}


JOBS = "query($t: String!) { trainingJobs(taskCode: $t) { nodes { id status recipe } } }"


@operation("trainingJobs", document=JOBS, classify=lambda value, seen: OK if len(value["nodes"]) == 1 else f"{value}")
async def _training_jobs(w: World) -> Variables:
    await w.training_job()
    return {"t": TASK}


MATRIX = "query($t: String!) { roundModelMatrix(taskCode: $t) { metric rounds rows { model { name } } } }"


@operation("roundModelMatrix", document=MATRIX, classify=lambda value, seen: OK if value["metric"] else f"{value}")
async def _round_model_matrix(w: World) -> Variables:
    return {"t": TASK}


@operation("trainCandidateModel")
async def _train_candidate_model(w: World) -> Variables:
    sets = await w.datasets()
    return _input(
        taskCode=TASK, datasets=[gid("Dataset", sets[DatasetAccess.SCORING].id)], hyperparameters={"smoothing": 0.5}
    )


@operation("evaluateRoundTargets")
async def _evaluate_round_targets(w: World) -> Variables:
    await w.datasets()
    return _input(taskCode=TASK)


@operation("cancelTraining")
async def _cancel_training(w: World) -> Variables:
    return _input(id=gid("TrainingJob", await w.training_job()))


ADVERSARIES = "query($t: String!) { adversaries(taskCode: $t) { name available } }"


def _classify_adversaries(value: Any, seen: Seen) -> str:
    available = {a["name"] for a in value if a["available"]}
    return OK if "toy-synonyms" in available else f"inconsistent: {value}"


@operation("adversaries", document=ADVERSARIES, classify=_classify_adversaries)
async def _adversaries(w: World) -> Variables:
    return {"t": TASK}


@operation("adversaries@hiddenTask", document=ADVERSARIES, classify=_classify_adversaries)
async def _adversaries_hidden(w: World) -> Variables:
    await w.hide_task()
    return {"t": TASK}


SUGGESTED_DRAFT = {"text": "a good day", "label": "good"}


@operation("suggestEdits")
async def _suggest_edits(w: World) -> Variables:
    return _input(taskCode=TASK, draft=dict(SUGGESTED_DRAFT), adversary="toy-synonyms")


@operation("suggestEdits@hiddenTask")
async def _suggest_edits_hidden(w: World) -> Variables:
    await w.hide_task()
    return _input(taskCode=TASK, draft=dict(SUGGESTED_DRAFT), adversary="toy-synonyms")


@operation("generateCandidates")
async def _generate_candidates(w: World) -> Variables:
    return _input(taskCode=TASK, adversary="toy-synonyms", budget=3, seed=1)


@operation("cancelGeneration")
async def _cancel_generation(w: World) -> Variables:
    return _input(id=gid("AdversaryRun", await w.adversary_run()))


RUNS = "query($t: String!) { adversaryRuns(taskCode: $t) { nodes { adversary status } } }"


@operation("adversaryRuns", document=RUNS, classify=lambda value, seen: OK if value["nodes"] else f"{value}")
async def _adversary_runs(w: World) -> Variables:
    await w.adversary_run()
    return {"t": TASK}


def _classify_training_progress(value: Any, seen: Seen) -> str:
    sent = seen.world.made["published"]
    if value["jobId"] != gid("TrainingJob", sent["job_id"]) or value["stage"] != sent["stage"]:
        return f"inconsistent: received {value}, published {sent}"
    return FULL


async def _training_event(w: World) -> tuple[str, dict[str, Any]]:
    payload = {"job_id": await w.training_job(), "status": "RUNNING", "progress": 0.5, "stage": "counting words"}
    w.made["published"] = payload
    return f"trainingProgress:{payload['job_id']}", payload


TRAINING_PROGRESS = "subscription($j: ID!) { trainingProgress(jobId: $j) { jobId status progress stage } }"


@operation("trainingProgress", document=TRAINING_PROGRESS, classify=_classify_training_progress, event=_training_event)
async def _training_progress(w: World) -> Variables:
    return {"j": gid("TrainingJob", await w.training_job())}


@operation("closeRound")
async def _close_round(w: World) -> Variables:
    return _input(taskCode=TASK)


@operation("updateRound")
async def _update_round(w: World) -> Variables:
    return _input(taskCode=TASK, round=1, description="The first round")


@operation("updateTaskSettings")
async def _update_task_settings(w: World) -> Variables:
    return _input(taskCode=TASK, validationQuorum=2)


# ---------------------------------------------------------------- ownership and proposals


@operation("declareTask")
async def _declare_task(w: World) -> Variables:
    return _input(definition=declaration("declared-new", "Declared"))


@operation("updateDeclaredTask")
async def _update_declared_task(w: World) -> Variables:
    await w.declared_task()
    return _input(code="declared-old", definition=declaration("declared-old", "Declared, renamed"))


@operation("grantTaskOwnership")
async def _grant_task_ownership(w: World) -> Variables:
    return _input(taskCode=TASK, username=(await w.account("grantee1")).username)


@operation("revokeTaskOwnership")
async def _revoke_task_ownership(w: World) -> Variables:
    return _input(taskCode=TASK, username=(await w.coowner()).username)


@operation("proposeTask")
async def _propose_task(w: World) -> Variables:
    return _input(code="new_task", name="A new task")


@operation("decideTaskProposal")
async def _decide_task_proposal(w: World) -> Variables:
    return _input(id=gid("TaskProposal", await w.proposal()), accept=False, note="not this year")


def _classify_proposals(value: Any, seen: Seen) -> str:
    return _which({p["code"] for p in value["nodes"]}, {"authors_task": AUTHOR, "others_task": OTHER}, seen.role)


@operation("taskProposals", document="{ taskProposals { nodes { id code } } }", classify=_classify_proposals)
async def _task_proposals(w: World) -> Variables:
    await w.proposal()
    return {}


# ---------------------------------------------------------------- data sets


def _classify_datasets(value: Any, seen: Seen) -> str:
    names = {d["name"] for d in value["nodes"]}
    if not {"bench-scoring", "bench-standard"} <= names:
        return f"inconsistent: {sorted(names)}"
    return FULL if "bench-hidden" in names else PUBLIC


DATASETS = "query($t: String!) { datasets(taskCode: $t) { nodes { name access } } }"


@operation("datasets", document=DATASETS, classify=_classify_datasets)
async def _datasets(w: World) -> Variables:
    await w.datasets()
    return {"t": TASK}


@operation("datasets@hiddenTask", document=DATASETS, classify=_classify_datasets)
async def _datasets_hidden(w: World) -> Variables:
    await w.datasets()
    await w.hide_task()
    return {"t": TASK}


def _classify_items(value: Any, seen: Seen) -> str:
    gold = ["label" in item["fields"] for item in value["nodes"]]
    if value["goldVisible"] and gold and all(gold):
        return FULL
    if not value["goldVisible"] and gold and not any(gold):
        return PUBLIC
    return f"leak: goldVisible {value['goldVisible']}, gold in items {gold}"


ITEMS = "query($id: ID!) { datasetItems(id: $id) { goldVisible nodes { position fields } } }"


async def _dataset_id(w: World, access: str) -> Variables:
    return {"id": gid("Dataset", (await w.datasets())[access].id)}


@operation("datasetItems", document=ITEMS, classify=_classify_items)
async def _dataset_items(w: World) -> Variables:
    return await _dataset_id(w, DatasetAccess.SCORING)


@operation("datasetItems@standardSet", document=ITEMS, classify=_classify_items)
async def _dataset_items_standard(w: World) -> Variables:
    return await _dataset_id(w, DatasetAccess.STANDARD)


@operation("datasetItems@hiddenSet", document=ITEMS, classify=_classify_items)
async def _dataset_items_hidden_set(w: World) -> Variables:
    return await _dataset_id(w, DatasetAccess.HIDDEN)


@operation("datasetItems@hiddenTask", document=ITEMS, classify=_classify_items)
async def _dataset_items_hidden_task(w: World) -> Variables:
    variables = await _dataset_id(w, DatasetAccess.STANDARD)
    await w.hide_task()
    return variables


@operation("updateDataset")
async def _update_dataset(w: World) -> Variables:
    return _input(id=gid("Dataset", (await w.datasets())[DatasetAccess.STANDARD].id), description="renamed")


@operation("updateDataset@hidden")
async def _update_dataset_hidden(w: World) -> Variables:
    return _input(id=gid("Dataset", (await w.datasets())[DatasetAccess.HIDDEN].id), access="SCORING")


@operation("deleteDataset")
async def _delete_dataset(w: World) -> Variables:
    return _input(id=gid("Dataset", (await w.datasets())[DatasetAccess.STANDARD].id))


@operation("deleteDataset@hidden")
async def _delete_dataset_hidden(w: World) -> Variables:
    return _input(id=gid("Dataset", (await w.datasets())[DatasetAccess.HIDDEN].id))


@operation("createRoundDatasets")
async def _create_round_datasets(w: World) -> Variables:
    await w.accepted_examples()
    return _input(taskCode=TASK, round=1)


PERTURBED = b"".join(
    json.dumps({"original_position": i, "text": f"a {word} day"}).encode() + b"\n"
    for i, word in enumerate(["goood", "baad", "dul"])
)


@operation("uploadPerturbedCopy", upload=("input.file", "copy.jsonl", PERTURBED))
async def _upload_perturbed_copy(w: World) -> Variables:
    scoring = (await w.datasets())[DatasetAccess.SCORING]
    return _input(datasetId=gid("Dataset", scoring.id), perturbation="dialect", kind="FAIRNESS", file=None)


# ---------------------------------------------------------------- models and leaderboards


@operation("submitModel")
async def _submit_model(w: World) -> Variables:
    return _input(taskCode=TASK, name="remote", backend="http", config={"url": "https://models.example.org/toy"})


@operation("submitModel@importPath")
async def _submit_model_import_path(w: World) -> Variables:
    # The production default (the test suite's settings open python to all, for its test doubles); set after the
    # world is built, since the world submits python models of its own.
    w.p.settings.submission_backends = "http,transformers"
    return _input(taskCode=TASK, name="local", backend="python", config=KEYWORD)


def _model_store(w: World) -> None:
    """Uploaded artifacts go to a data directory of the test session's own, not the working directory's."""
    global _ARTIFACTS
    if _ARTIFACTS is None:
        _ARTIFACTS = tempfile.TemporaryDirectory(prefix="dynaforge-authz-")
    w.p.settings.data_dir = Path(_ARTIFACTS.name)


_ARTIFACTS: tempfile.TemporaryDirectory | None = None


@operation("uploadMedia", upload=("input.file", "digit.png", TINY_PNG))
async def _upload_media(w: World) -> Variables:
    _model_store(w)  # the data directory of the test session's own
    return _input(file=None)


@operation("uploadModel", upload=("input.file", "model.tar.gz", MINIMAL_ARCHIVE))
async def _upload_model(w: World) -> Variables:
    _model_store(w)
    return _input(taskCode=TASK, name="uploaded", file=None)


@operation("uploadModel@hiddenTask", upload=("input.file", "model.tar.gz", MINIMAL_ARCHIVE))
async def _upload_model_hidden_task(w: World) -> Variables:
    _model_store(w)
    await w.hide_task()
    return _input(taskCode=TASK, name="uploaded", file=None)


@operation("submitPredictions")
async def _submit_predictions(w: World) -> Variables:
    size = (await w.datasets())[DatasetAccess.SCORING].size
    return _input(
        taskCode=TASK, name="predictions", datasetName="bench-scoring", predictions=[{"label": "good"}] * size
    )


@operation("submitSelection")
async def _submit_selection(w: World) -> Variables:
    pool = (await w.datasets())[DatasetAccess.STANDARD]
    items = [gid("DatasetItem", f"{pool.id}:{position}") for position in range(pool.size)]
    return _input(taskCode=TASK, name="selection", datasetName="bench-standard", itemIds=items)


@operation("submitSelection@hiddenSet")
async def _submit_selection_hidden_set(w: World) -> Variables:
    hidden = (await w.datasets())[DatasetAccess.HIDDEN]
    return _input(
        taskCode=TASK, name="selection", datasetName="bench-hidden", itemIds=[gid("DatasetItem", f"{hidden.id}:0")]
    )


@operation("submitPredictions@hiddenSet")
async def _submit_predictions_hidden_set(w: World) -> Variables:
    size = (await w.datasets())[DatasetAccess.HIDDEN].size
    return _input(taskCode=TASK, name="predictions", datasetName="bench-hidden", predictions=[{"label": "good"}] * size)


def _model_view(model: dict[str, Any]) -> str:
    """FULL (configuration, submitter, the failed evaluation's error and log), PUBLIC (none of them; the submitter
    of an anonymous model neither), or a leak."""
    failures = [(e["error"], e["logTail"]) for e in model["evaluations"]["nodes"]]
    if not failures:
        return "inconsistent: the world's model has a failed evaluation"
    if model["config"] is not None:
        if model["submitter"] is None or not all(error and log for error, log in failures):
            return f"inconsistent: privileged, yet {model}"
        return FULL
    if model["anonymous"] and model["submitter"] is not None:
        return "leak: the submitter of an anonymous model"
    if any(error is not None or log is not None for error, log in failures):
        return "leak: an evaluation's error or log"
    return PUBLIC


def _classify_model(value: Any, seen: Seen) -> str:
    return NOTFOUND if value is None else _model_view(value)


MODEL = (
    "query($id: ID!) { model(id: $id) { id anonymous submitter { username } config "
    "evaluations { nodes { status error logTail } } } }"
)


@operation("model", document=MODEL, classify=_classify_model)
async def _model(w: World) -> Variables:
    return {"id": gid("Model", await w.model())}


@operation("model@published", document=MODEL, classify=_classify_model)
async def _model_published(w: World) -> Variables:
    return {"id": gid("Model", await w.model(published=True))}


@operation("model@hiddenTask", document=MODEL, classify=_classify_model)
async def _model_hidden(w: World) -> Variables:
    model_id = await w.model(published=True)
    await w.hide_task()
    return {"id": gid("Model", model_id)}


def _classify_models(value: Any, seen: Seen) -> str:
    """NONE when AUTHOR's model is not in the list, else how much of it shows (see _model_view)."""
    authors = [e["node"] for e in value["edges"] if e["node"]["name"] == "authors-model"]
    return NONE if not authors else _model_view(authors[0])


MODELS = (
    "query($t: String!) { models(taskCode: $t) { edges { node { id name anonymous submitter { username } config "
    "evaluations { nodes { status error logTail } } } } } }"
)


@operation("models", document=MODELS, classify=_classify_models)
async def _models(w: World) -> Variables:
    await w.model()
    return {"t": TASK}


@operation("models@published", document=MODELS, classify=_classify_models)
async def _models_published(w: World) -> Variables:
    await w.model(published=True)
    return {"t": TASK}


@operation("models@hiddenTask", document=MODELS, classify=_classify_models)
async def _models_hidden(w: World) -> Variables:
    await w.model(published=True)
    await w.hide_task()
    return {"t": TASK}


@operation("updateModel")
async def _update_model(w: World) -> Variables:
    return _input(id=gid("Model", await w.model()), name="renamed")


@operation("updateModel@published")
async def _update_model_published(w: World) -> Variables:
    return _input(id=gid("Model", await w.model(published=True)), published=False)


@operation("deleteModel")
async def _delete_model(w: World) -> Variables:
    return _input(id=gid("Model", await w.model()))


@operation("deleteModel@published")
async def _delete_model_published(w: World) -> Variables:
    return _input(id=gid("Model", await w.model(published=True)))


def _classify_leaderboard(value: Any, seen: Seen) -> str:
    """A row's model is the public view, in a type of its own (no configuration, no evaluations' errors in it at
    all): OK unless it names an anonymous model's submitter."""
    if not value["rows"]:
        return "inconsistent: no rows to check"
    for row in value["rows"]:
        model = row["model"]
        if model["anonymous"] and model["submitter"] is not None:
            return "leak: the submitter of an anonymous model"
    return OK


BOARD = (
    "query($t: String!) { leaderboard(taskCode: $t) { rows { model { modelId anonymous submitter { username } } } } }"
)


@operation("leaderboard", document=BOARD, classify=_classify_leaderboard)
async def _leaderboard(w: World) -> Variables:
    await w.model(published=True)
    return {"t": TASK}


@operation("leaderboard@hiddenTask", document=BOARD, classify=_classify_leaderboard)
async def _leaderboard_hidden(w: World) -> Variables:
    await w.model(published=True)
    await w.hide_task()
    return {"t": TASK}


@operation("saveLeaderboardFork")
async def _save_leaderboard_fork(w: World) -> Variables:
    return _input(taskCode=TASK, name="my weights")


@operation("snapshotLeaderboard")
async def _snapshot_leaderboard(w: World) -> Variables:
    return _input(taskCode=TASK, name="today")


SNAPSHOT = "query($id: ID!) { leaderboardSnapshot(id: $id) { id name rows { modelName rank } } }"


@operation("leaderboardSnapshot", document=SNAPSHOT, classify=_found)
async def _leaderboard_snapshot(w: World) -> Variables:
    return {"id": gid("LeaderboardSnapshot", await w.snapshot())}


@operation("leaderboardSnapshot@hiddenTask", document=SNAPSHOT, classify=_found)
async def _leaderboard_snapshot_hidden(w: World) -> Variables:
    snapshot_id = await w.snapshot()
    await w.hide_task()
    return {"id": gid("LeaderboardSnapshot", snapshot_id)}


def _classify_mine(names_key: str, own: str):
    def classify(value: Any, seen: Seen) -> str:
        names = {item["name"] for item in value["nodes"]}
        if not names:
            return NONE
        return OWN if names == {own} else f"leak: {sorted(names)}"

    return classify


@operation(
    "myLeaderboardForks",
    document="query($t: String!) { myLeaderboardForks(taskCode: $t) { nodes { id name } } }",
    classify=_classify_mine("forks", "authors-fork"),
)
async def _my_forks(w: World) -> Variables:
    await w.fork()
    return {"t": TASK}


@operation(
    "myLeaderboardSnapshots",
    document="query($t: String!) { myLeaderboardSnapshots(taskCode: $t) { nodes { id name } } }",
    classify=_classify_mine("snapshots", "authors-snapshot"),
)
async def _my_snapshots(w: World) -> Variables:
    await w.snapshot()
    return {"t": TASK}


@operation("deleteLeaderboardFork")
async def _delete_fork(w: World) -> Variables:
    return _input(id=gid("LeaderboardFork", await w.fork()))


@operation("deleteLeaderboardFork@hiddenTask")
async def _delete_fork_hidden(w: World) -> Variables:
    fork_id = await w.fork()
    await w.hide_task()
    return _input(id=gid("LeaderboardFork", fork_id))


@operation("deleteLeaderboardSnapshot")
async def _delete_snapshot(w: World) -> Variables:
    return _input(id=gid("LeaderboardSnapshot", await w.snapshot()))


# ---------------------------------------------------------------- webhooks


@operation("createWebhook")
async def _create_webhook(w: World) -> Variables:
    return _input(taskCode=TASK, url=HOOK_URL, events=["MODEL_FOOLED", "ROUND_CHANGED"], description="mine")


@operation("createWebhook@hiddenTask")
async def _create_webhook_hidden(w: World) -> Variables:
    await w.hide_task()
    return _input(taskCode=TASK, url=HOOK_URL, events=["MODEL_FOOLED", "ROUND_CHANGED"], description="mine")


@operation("redeliverWebhook")
async def _redeliver_webhook(w: World) -> Variables:
    return _input(id=gid("WebhookDelivery", await w.failed_delivery()))


USERS = "query { users(first: 5) { totalCount nodes { id username active } } }"


@operation("users", document=USERS, classify=lambda value, seen: OK if value["nodes"] else f"{value}")
async def _users(w: World) -> Variables:
    return {}


@operation("setUserAdmin")
async def _set_user_admin(w: World) -> Variables:
    return _input(id=gid("User", (await w.account("promoted")).user_id), isAdmin=True)


@operation("setUserActive")
async def _set_user_active(w: World) -> Variables:
    return _input(id=gid("User", (await w.account("disabled")).user_id), active=False)


@operation("rotateWebhookSecret")
async def _rotate_webhook_secret(w: World) -> Variables:
    return _input(id=gid("Webhook", await w.webhook()))


@operation("updateWebhook")
async def _update_webhook(w: World) -> Variables:
    """Where it sends: the registrant's alone (owners and admins see it, so they are told, not hidden from)."""
    return _input(id=gid("Webhook", await w.webhook()), url="https://elsewhere.example.org/hook")


@operation("updateWebhook@pause")
async def _update_webhook_pause(w: World) -> Variables:
    return _input(id=gid("Webhook", await w.webhook()), active=False)


@operation("deleteWebhook")
async def _delete_webhook(w: World) -> Variables:
    return _input(id=gid("Webhook", await w.webhook()))


@operation("deleteWebhook@hiddenTask")
async def _delete_webhook_hidden(w: World) -> Variables:
    """The registrant may still remove a webhook of a task hidden since (the one way to stop its deliveries)."""
    webhook_id = await w.webhook()
    await w.hide_task()
    return _input(id=gid("Webhook", webhook_id))


def _classify_webhooks(value: Any, seen: Seen) -> str:
    by_role = {gid("Webhook", i): r for i, r in seen.world.made["webhooks_by_role"].items()}
    return _which({hook["id"] for hook in value}, by_role, seen.role)


WEBHOOKS = "query($t: String!) { webhooks(taskCode: $t) { id url events deliveries { nodes { id } } } }"


async def _webhooks_by_role(w: World) -> None:
    w.made["webhooks_by_role"] = {await w.webhook(): AUTHOR, await w.others_webhook(): OTHER}


@operation("webhooks", document=WEBHOOKS, classify=_classify_webhooks)
async def _webhooks(w: World) -> Variables:
    await _webhooks_by_role(w)
    return {"t": TASK}


@operation("webhooks@hiddenTask", document=WEBHOOKS, classify=_classify_webhooks)
async def _webhooks_hidden(w: World) -> Variables:
    await _webhooks_by_role(w)
    await w.hide_task()
    return {"t": TASK}


# ---------------------------------------------------------------- live events (subscriptions)
# Each row publishes, once the subscription listens, the event a service would (see ``subscribe``); the classifier
# checks that the role received that event, and how much of it.


def _classify_example_event(value: Any, seen: Seen) -> str:
    if value is None:  # the sentinel came first: the published event was withheld (see ``subscribe``)
        return NONE
    sent = seen.world.made["published"]
    example = value.get("example", value)
    if example is None or example["id"] != gid("Example", sent["id"]) or example["task"]["code"] != TASK:
        return f"inconsistent: received {value}, published example {sent['id']}"
    if "label" in sent and value.get("label") != sent["label"]:
        return f"inconsistent: label {value.get('label')}, published {sent['label']}"
    return OK


async def _example_event(event: str, w: World) -> tuple[str, dict[str, Any]]:
    payload = await w.example_event()
    if event == "exampleValidated":
        payload = {**payload, "label": "CORRECT"}
    return f"{event}:{TASK}", payload


EXAMPLE_FIELDS = "id fields fooled status task { code } round { number } votes { correct }"
# Events other than modelFooled show someone else's example as a RedactedExample (its id as exampleId).
EITHER_FIELDS = (
    f"... on Example {{ {EXAMPLE_FIELDS} }} "
    "... on RedactedExample { id: exampleId fields status task { code } round { number } votes { correct } }"
)
EXAMPLE_EVENTS = {
    "modelFooled": f"subscription($t: String!) {{ modelFooled(taskCode: $t) {{ {EXAMPLE_FIELDS} }} }}",
    "exampleCreated": f"subscription($t: String!) {{ exampleCreated(taskCode: $t) {{ {EITHER_FIELDS} }} }}",
    "examplePredicted": f"subscription($t: String!) {{ examplePredicted(taskCode: $t) {{ {EITHER_FIELDS} }} }}",
    "verdictDecided": f"subscription($t: String!) {{ verdictDecided(taskCode: $t) {{ {EITHER_FIELDS} }} }}",
    "exampleValidated": (
        f"subscription($t: String!) {{ exampleValidated(taskCode: $t) {{ label example {{ {EITHER_FIELDS} }} }} }}"
    ),
}


def _example_subscription(event: str) -> None:
    """The rows ``event`` and ``event@hiddenTask``: AUTHOR's fooling example, as the services publish it."""

    async def publish(w: World) -> tuple[str, dict[str, Any]]:
        return await _example_event(event, w)

    async def visible(w: World) -> Variables:
        await w.example()
        return {"t": TASK}

    async def hidden(w: World) -> Variables:
        await w.example()
        await w.hide_task()
        return {"t": TASK}

    for key, build in ((event, visible), (f"{event}@hiddenTask", hidden)):
        operation(key, document=EXAMPLE_EVENTS[event], classify=_classify_example_event, event=publish)(build)


for _event in EXAMPLE_EVENTS:
    _example_subscription(_event)


REPLY_STREAM_ID = "authz-stream-0001"


async def _reply_piece(w: World) -> tuple[str, dict[str, Any]]:
    """A piece of AUTHOR's reply stream, on AUTHOR's topic."""
    return f"reply:{w.actors[AUTHOR].user_id}:{REPLY_STREAM_ID}", {"model": "m", "text": "x", "index": 0, "done": False}


def _classify_reply_stream(value: Any, seen: Seen) -> str:
    """The first event of one's own stream says it listens (index 0, no model, no text)."""
    if value == {"index": 0, "model": None, "text": "", "done": False}:
        return OK
    return f"inconsistent: the first event is {value}, not the listening one"


@operation(
    "replyStream",
    document="subscription($s: String!) { replyStream(streamId: $s) { index model text done } }",
    classify=_classify_reply_stream,
    event=_reply_piece,
)
async def _reply_stream(w: World) -> Variables:
    return {"s": REPLY_STREAM_ID}


async def _model_fooled_published(w: World) -> tuple[str, dict[str, Any]]:
    return await _example_event("modelFooled", w)


@operation(
    "modelFooled@after",
    document="subscription($t: String!, $a: ID) { modelFooled(taskCode: $t, after: $a) { " + EXAMPLE_FIELDS + " } }",
    classify=_classify_example_event,
    event=_model_fooled_published,
)
async def _model_fooled_after(w: World) -> Variables:
    """Resumed after an earlier example (OTHER's): AUTHOR's fooling one comes, read from the database (its live
    copy is not sent twice). OTHER's later one is retracted, so every role that receives AUTHOR's gets it alone."""
    from dynaforge.services import examples as example_service

    earlier = await w._write(OTHER, {"text": "grey skies", "label": "good"})
    await w.example()
    await example_service.retract(w.p, w.actors[OTHER], w.made["others_example"])
    return {"t": TASK, "a": gid("Example", earlier)}


def _classify_round_changed(value: Any, seen: Seen) -> str:
    sent = seen.world.made["published"]
    if (value["taskCode"], value["change"], value["round"]["number"]) != (TASK, sent["change"], sent["number"]):
        return f"inconsistent: received {value}, published {sent}"
    return _config_view([m["config"] for m in value["round"]["targetModels"]])


async def _round_event(w: World) -> tuple[str, dict[str, Any]]:
    return f"roundChanged:{TASK}", await w.round_event()


ROUND_CHANGED = (
    "subscription($t: String!) { roundChanged(taskCode: $t) { taskCode change "
    "round { number targetModels { name config } } } }"
)


@operation("roundChanged", document=ROUND_CHANGED, classify=_classify_round_changed, event=_round_event)
async def _round_changed(w: World) -> Variables:
    return {"t": TASK}


@operation("roundChanged@hiddenTask", document=ROUND_CHANGED, classify=_classify_round_changed, event=_round_event)
async def _round_changed_hidden(w: World) -> Variables:
    await w.hide_task()
    return {"t": TASK}


def _classify_progress(value: Any, seen: Seen) -> str:
    """FULL: the failed evaluation's error shows (its submitter, owners, admins); PUBLIC: it does not."""
    sent = seen.world.made["published"]
    if (value["modelId"], value["evaluationId"], value["status"]) != (
        gid("Model", sent["model_id"]),
        gid("Evaluation", sent["evaluation_id"]),
        sent["status"],
    ):
        return f"inconsistent: received {value}, published {sent}"
    if value["error"] is None:
        return PUBLIC
    return FULL if value["error"] == sent["error"] else f"inconsistent: error {value['error']!r}"


def _progress_event(published: bool) -> Event:
    async def publish(w: World) -> tuple[str, dict[str, Any]]:
        payload = await w.progress_event(published=published)
        return f"evaluationProgress:{payload['model_id']}", payload

    return publish


PROGRESS = (
    "subscription($m: ID!) { evaluationProgress(modelId: $m) { modelId evaluationId datasetName status "
    "progress error } }"
)


@operation("evaluationProgress", document=PROGRESS, classify=_classify_progress, event=_progress_event(False))
async def _evaluation_progress(w: World) -> Variables:
    return {"m": gid("Model", await w.model())}


@operation("evaluationProgress@published", document=PROGRESS, classify=_classify_progress, event=_progress_event(True))
async def _evaluation_progress_published(w: World) -> Variables:
    return {"m": gid("Model", await w.model(published=True))}


@operation("evaluationProgress@hiddenTask", document=PROGRESS, classify=_classify_progress, event=_progress_event(True))
async def _evaluation_progress_hidden(w: World) -> Variables:
    model_id = await w.model(published=True)
    await w.hide_task()
    return {"m": gid("Model", model_id)}


def _classify_evaluation_updated(value: Any, seen: Seen) -> str:
    """FULL: the private model's evaluation came first (its submitter, owners, admins); PUBLIC: only the published
    model's did (the private one was withheld)."""
    private, published = seen.world.made["published"]["ids"]
    got = value["evaluation"]["id"]
    if got == gid("Evaluation", private):
        return FULL
    return PUBLIC if got == gid("Evaluation", published) else f"inconsistent: received {value}"


async def _evaluation_updated_event(w: World) -> tuple[str, dict[str, Any]]:
    """An evaluationUpdated payload naming a private model's evaluation, then a published one's. Every evaluation
    of the task has ended first, so a subscription sends nothing before it (none is queued or running)."""
    private, published = await w.model(), await w.model(published=True)
    async with w.p.db.write() as s:
        await s.execute(update(Evaluation).values(status=EvaluationStatus.FAILED))
        ids = [
            await s.scalar(select(Evaluation.id).where(Evaluation.model_id == m).order_by(Evaluation.id).limit(1))
            for m in (private, published)
        ]
        task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == TASK))
    return f"evaluationUpdated:#{task_id}", {"task_id": task_id, "ids": ids}


EVALUATION_UPDATED = (
    "subscription($t: String!) { evaluationUpdated(taskCode: $t) { cursor evaluation { id status model { id } } } }"
)


@operation(
    "evaluationUpdated",
    document=EVALUATION_UPDATED,
    classify=_classify_evaluation_updated,
    event=_evaluation_updated_event,
)
async def _evaluation_updated(w: World) -> Variables:
    return {"t": TASK}


@operation(
    "evaluationUpdated@hiddenTask",
    document=EVALUATION_UPDATED,
    classify=_classify_evaluation_updated,
    event=_evaluation_updated_event,
)
async def _evaluation_updated_hidden(w: World) -> Variables:
    await w.model()
    await w.model(published=True)
    await w.hide_task()
    return {"t": TASK}


def _update_event(event: str, kind: str, make: Callable[[World], Awaitable[int]]) -> Event:
    async def publish(w: World) -> tuple[str, dict[str, Any]]:
        object_id = await make(w)
        async with w.p.db.session() as s:
            task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == TASK))
        w.made["updated"] = gid(kind, object_id)
        return f"{event}:#{task_id}", {"task_id": task_id, "ids": [object_id]}

    return publish


def _classify_updated(field: str) -> Classify:
    def classify(value: Any, seen: Seen) -> str:
        got = value[field]["id"]
        return OK if got == seen.world.made["updated"] else f"inconsistent: received {value}"

    return classify


@operation(
    "trainingJobUpdated",
    document="subscription($t: String!) { trainingJobUpdated(taskCode: $t) { cursor job { id status } } }",
    classify=_classify_updated("job"),
    event=_update_event("trainingJobUpdated", "TrainingJob", World.training_job),
)
async def _training_job_updated(w: World) -> Variables:
    return {"t": TASK}


@operation(
    "adversaryRunUpdated",
    document="subscription($t: String!) { adversaryRunUpdated(taskCode: $t) { cursor run { id status } } }",
    classify=_classify_updated("run"),
    event=_update_event("adversaryRunUpdated", "AdversaryRun", World.adversary_run),
)
async def _adversary_run_updated(w: World) -> Variables:
    return {"t": TASK}


# --------------------------------------------------------------------------- the schema, and running a cell

SCHEMA = build_schema()._schema
ROOTS = {"Query": SCHEMA.query_type, "Mutation": SCHEMA.mutation_type, "Subscription": SCHEMA.subscription_type}
QUERY_ERRORS = {"NOT_AUTHENTICATED": NOAUTH, "FORBIDDEN": FORBIDDEN, "NOT_FOUND": NOTFOUND, "INVALID_INPUT": INVALID}


def _root(name: str) -> str | None:
    return next((root for root, kind in ROOTS.items() if kind is not None and name in kind.fields), None)


def _mutation_document(name: str) -> str:
    """``mutation($input: XInput!) { name(input: $input) { __typename ... on Error { message } } }``."""
    args = SCHEMA.mutation_type.fields[name].args
    if not args:
        return f"mutation {{ {name} {{ __typename ... on Error {{ message }} }} }}"
    definitions = ", ".join(f"${a}: {arg.type}" for a, arg in args.items())
    passing = ", ".join(f"{a}: ${a}" for a in args)
    return f"mutation({definitions}) {{ {name}({passing}) {{ __typename ... on Error {{ message }} }} }}"


def _success_types(name: str) -> set[str]:
    """The members of a mutation's result union that are not an Error: its successes."""
    result = get_named_type(SCHEMA.mutation_type.fields[name].type)
    assert isinstance(result, GraphQLUnionType), f"{name} should return a union of its payload and its errors"
    error = SCHEMA.get_type("Error")
    return {t.name for t in result.types if error not in t.interfaces}


def _outcome(key: str, body: dict[str, Any], seen: Seen) -> str:
    op = OPERATIONS[key]
    errors = body.get("errors") or []
    if errors:
        code = (errors[0].get("extensions") or {}).get("code")
        return QUERY_ERRORS.get(code, f"error {code}: {errors[0].get('message')}")
    value = body["data"]
    for step in op.path or (op.field_name,):
        if value is None:  # task(code:) is null for a task the role may not see: the root field's NOT_FOUND
            return NOTFOUND
        value = value[step]
    if op.classify is not None:
        return op.classify(value, seen)
    return OK if value["__typename"] in _success_types(op.field_name) else value["__typename"]


async def send(http, key: str, variables: Variables, token: str | None) -> dict[str, Any]:
    op = OPERATIONS[key]
    assert _root(op.field_name) != "Subscription", f"{key}: a subscription runs over a websocket (subscribe)"
    document = op.document or _mutation_document(op.field_name)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if op.upload is not None:
        path, filename, content = op.upload
        headers["Apollo-Require-Preflight"] = "true"
        response = await http.post(
            "/graphql", headers=headers, **multipart(document, variables, path, filename, content)
        )
    else:
        response = await http.post("/graphql", json={"query": document, "variables": variables}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


class Relay:
    """One uvicorn server on loopback for the module's subscription cells (the in-process transport speaks no
    websockets); each cell points it at the app of its own platform, on the test's event loop and database."""

    def __init__(self):
        self.app: Any = None
        self.server: uvicorn.Server | None = None
        self.serving: asyncio.Task | None = None
        self.port = 0

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)

    async def url(self, app: Any) -> str:
        self.app = app
        if self.server is None:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
            self.server = uvicorn.Server(uvicorn.Config(self, log_level="warning", lifespan="off"))
            self.serving = asyncio.create_task(self.server.serve(sockets=[sock]))
            for _ in range(250):
                if self.server.started or self.serving.done():
                    break
                await asyncio.sleep(0.02)
            assert self.server.started, "the websocket server did not start"
        return f"ws://127.0.0.1:{self.port}/graphql"

    async def close(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
            await asyncio.wait_for(self.serving, timeout=10)


@pytest.fixture(scope="module")
async def relay():
    served = Relay()
    try:
        yield served
    finally:
        await served.close()


WAIT_S = 15.0  # for any one step of a subscription cell; a cell that hangs fails, saying which step


#: The example id of a sentinel event (no example has it).
SENTINEL = 10**9


async def subscribe(
    relay: Relay, world: World, key: str, variables: Variables, token: str | None, sentinel_for: int | None = None
) -> dict[str, Any]:
    """Run a subscription cell over graphql-transport-ws (the token in connection_init, as browsers send it): once
    the subscription listens on the bus, publish the row's event there; the answer is the first message, as a
    GraphQL response ({"data": ...} or {"errors": [...]}).

    ``sentinel_for`` (a cell that expects the event withheld from its role): a sentinel follows the event, the same
    example as the role's own (that user's id, example id ``SENTINEL``), which the role receives whatever the rule;
    messages are read until it comes, and the answer is the published example's message if one came before it,
    else ``{"data": {field: None}}``."""
    op, p = OPERATIONS[key], world.p
    topic, payload = await op.event(world)
    world.made["published"] = payload
    await p.events.start()
    url = await relay.url(create_app(platform=p, sync_tasks=False))
    init = {"authorization": f"Bearer {token}"} if token else {}
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"], open_timeout=WAIT_S) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        ack = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
        assert ack["type"] == "connection_ack", ack
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": op.document, "variables": variables}})
        )
        first = asyncio.ensure_future(ws.recv())
        try:
            waited = 0.0
            while not first.done() and not p.events.subscriber_count(topic) and waited < WAIT_S:
                await asyncio.sleep(0.005)
                waited += 0.005
            if not first.done():
                if not p.events.subscriber_count(topic):
                    return {"errors": [{"message": f"neither an answer nor a listener on {topic} in {WAIT_S} s"}]}
                await p.events.publish(topic, payload)
                if sentinel_for is not None:
                    await p.events.publish(topic, {**payload, "id": SENTINEL, "user_id": sentinel_for})
            message = json.loads(await asyncio.wait_for(first, WAIT_S))
            if sentinel_for is not None and message["type"] == "next" and "errors" not in message["payload"]:
                return await _until_sentinel(ws, op.field_name, payload["id"], message, p, topic)
        except TimeoutError:
            return {"errors": [{"message": f"the subscription listens on {topic}, yet no event came in {WAIT_S} s"}]}
        finally:
            first.cancel()
        if message["type"] == "next" and "errors" not in message["payload"]:
            for _ in range(op.then):
                following = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
                assert following["type"] == "next" and "errors" not in following["payload"], following
            await ws.send(json.dumps({"id": "1", "type": "complete"}))
    for _ in range(int(WAIT_S / 0.01)):  # the server has let go of the subscription before the database rolls back
        if not p.events.subscriber_count(topic):
            break
        await asyncio.sleep(0.01)
    if message["type"] == "next":
        return message["payload"]
    if message["type"] == "error":
        return {"errors": message["payload"]}
    return {"errors": [{"message": f"unexpected message {message}"}]}


async def _until_sentinel(ws, field: str, published: int, message: dict, p, topic: str) -> dict[str, Any]:
    """Read from ``message`` on until the sentinel (see ``subscribe``), then end the subscription; the published
    example's message when it came first, else the answer of a withheld event."""
    seen = None
    for _ in range(5):  # the role's own examples (a replay) may come too
        if message["type"] != "next" or "errors" in message["payload"]:
            return {"errors": [{"message": f"unexpected message {message}"}]}
        value = message["payload"]["data"][field]
        example_id = value.get("example", value)["id"]
        if example_id == gid("Example", SENTINEL):
            break
        if example_id == gid("Example", published):
            seen = message["payload"]
        message = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
    else:
        return {"errors": [{"message": "the sentinel did not come"}]}
    await ws.send(json.dumps({"id": "1", "type": "complete"}))
    for _ in range(int(WAIT_S / 0.01)):  # the server has let go of the subscription before the database rolls back
        if not p.events.subscriber_count(topic):
            break
        await asyncio.sleep(0.01)
    return seen or {"data": {field: None}}


# --------------------------------------------------------------------------- the same lists on Task

#: The deprecated root fields that take a taskCode, and the Task field that answers the same. Each of their rows runs
#: again (key ``<row>@task``) as ``task(code:) { <field>(...) }``, expecting every role's outcome unchanged.
ON_TASK = {
    "contexts": "contexts",
    "examples": "examples",
    "models": "models",
    "datasets": "datasets",
    "leaderboard": "leaderboard",
    "myLeaderboardForks": "viewerLeaderboardForks",
    "myLeaderboardSnapshots": "viewerLeaderboardSnapshots",
    "webhooks": "webhooks",
    "trainingRecipes": "trainingRecipes",
    "registeredModels": "registeredModels",
    "trainingJobs": "trainingJobs",
    "roundModelMatrix": "roundModelMatrix",
    "adversaries": "adversaries",
    "adversaryRuns": "adversaryRuns",
    "validationQueueSize": "validationQueueSize",
}


#: Those whose Task field is a connection of the root field's list: their selection is asked of its ``nodes``.
PAGED_ON_TASK = {"registeredModels"}


def on_task(document: str, root_field: str, task_field: str) -> str:
    """The document with its root field asked as a field of ``task(code:)``, given what taskCode was (of its
    ``nodes`` where the Task field is a connection and the root field a list, :data:`PAGED_ON_TASK`)."""
    tree = parse(document)
    operation_ = next(d for d in tree.definitions if isinstance(d, OperationDefinitionNode))
    selections = list(operation_.selection_set.selections)
    at = next(i for i, s in enumerate(selections) if isinstance(s, FieldNode) and s.name.value == root_field)
    field = selections[at]
    code = next(a.value for a in field.arguments if a.name.value == "taskCode")
    selection_set = field.selection_set
    if root_field in PAGED_ON_TASK:
        nodes = FieldNode(
            alias=None, name=NameNode(value="nodes"), arguments=(), directives=(), selection_set=selection_set
        )
        selection_set = SelectionSetNode(selections=(nodes,))
    moved = FieldNode(
        alias=None,
        name=NameNode(value=task_field),
        arguments=tuple(a for a in field.arguments if a.name.value != "taskCode"),
        directives=field.directives,
        selection_set=selection_set,
    )
    selections[at] = FieldNode(
        alias=None,
        name=NameNode(value="task"),
        arguments=(ArgumentNode(name=NameNode(value="code"), value=code),),
        directives=(),
        selection_set=SelectionSetNode(selections=(moved,)),
    )
    rewritten = OperationDefinitionNode(
        operation=operation_.operation,
        name=operation_.name,
        variable_definitions=operation_.variable_definitions,
        directives=operation_.directives,
        selection_set=SelectionSetNode(selections=tuple(selections)),
    )
    return print_ast(DocumentNode(definitions=tuple(rewritten if d is operation_ else d for d in tree.definitions)))


for _key in [k for k in RULES if k.split("@")[0] in ON_TASK]:
    _op = OPERATIONS[_key]
    assert _op.document is not None
    _name = _op.field_name
    # A hidden task is null to whoever may not see it, signed in or not: where the root field checks the sign-in
    # first (NOT_AUTHENTICATED), task(code:) answers null (NotFound) before its field is asked.
    RULES[f"{_key}@task"] = {
        role: NOTFOUND if "@hiddenTask" in _key and outcome == NOAUTH else outcome
        for role, outcome in RULES[_key].items()
    }
    OPERATIONS[f"{_key}@task"] = replace(
        _op,
        document=on_task(_op.document, _name, ON_TASK[_name]),
        path=("task", ON_TASK[_name], *(("nodes",) if _name in PAGED_ON_TASK else ())),
    )


def _cells():
    for key, row in RULES.items():
        for role in ROLES:
            expected = row[role]
            marks = [pytest.mark.xfail(strict=True, reason=expected.reason)] if isinstance(expected, Bug) else []
            yield pytest.param(key, role, marks=marks, id=f"{key}-{role}")


# --------------------------------------------------------------------------- the tests


def test_rules_cover_the_schema():
    """Every operation of the schema has a row (or, for a query, a reason to be public); no row is stale."""
    operations: dict[str, str] = {}
    for root, kind in ROOTS.items():
        for name in kind.fields if kind is not None else ():
            assert name not in operations, f"{name} is both a {operations[name]} and a {root} field: key RULES by root"
            operations[name] = root
    rows = {key.split("@")[0] for key in RULES}
    missing = sorted(f"{operations[n]}.{n}" for n in set(operations) - rows - set(PUBLIC_QUERIES))
    assert not missing, f"operations without a row in RULES (add one, every role's outcome): {missing}"
    assert not rows - set(operations), f"RULES rows for operations the schema lacks: {sorted(rows - set(operations))}"
    stale = set(PUBLIC_QUERIES) - {n for n, r in operations.items() if r == "Query"}
    assert not stale, f"PUBLIC_QUERIES names what is not a query: {sorted(stale)}"
    assert not set(PUBLIC_QUERIES) & rows, "an operation is both PUBLIC and in RULES"
    assert all(reason.strip() for reason in PUBLIC_QUERIES.values())


def test_every_row_says_how_to_run_it():
    assert set(OPERATIONS) == set(RULES), set(OPERATIONS) ^ set(RULES)
    for key, row in RULES.items():
        assert tuple(row) == ROLES, key
        op = OPERATIONS[key]
        if _root(op.field_name) == "Mutation":
            assert op.classify is None and _success_types(op.field_name), key
        else:
            assert op.document and op.classify, f"row {key} needs a document and a classifier"
        assert (op.event is not None) == (_root(op.field_name) == "Subscription"), f"{key}: an event iff a subscription"


@pytest.mark.parametrize(("key", "role"), list(_cells()))
async def test_cell(platform, client, relay, key, role):
    world = await World.create(platform)
    variables = await OPERATIONS[key].build(world)
    token = await world.token(role)
    expected = RULES[key][role]
    expected = expected.expected if isinstance(expected, Bug) else expected
    if OPERATIONS[key].event is not None:
        sentinel_for = world.actors[role].user_id if expected == NONE and role in world.actors else None
        body = await subscribe(relay, world, key, variables, token, sentinel_for)
    else:
        body = await send(client, key, variables, token)
    got = _outcome(key, body, Seen(world, role))
    assert got == expected, f"{key} as {role}: expected {expected}, got {got}: {json.dumps(body)[:800]}"
