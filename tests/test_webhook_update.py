"""Changing a webhook: its registrant moves it or changes what it hears; the task's owners may pause it; a paused
webhook gets no deliveries until it is resumed."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from support import gid, make_user

from dynaforge.db.models import WebhookDelivery
from dynaforge.errors import Forbidden, InvalidInput, NotFound
from dynaforge.services import examples, tasks, webhooks
from dynaforge.services.actor import Actor


@pytest.fixture
async def people(platform):
    actors = {n: await make_user(platform, f"wh_{n}") for n in ("registrant", "owner", "other", "writer")}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    return actors


async def _deliveries(p) -> int:
    async with p.db.session() as s:
        return int(await s.scalar(select(func.count()).select_from(WebhookDelivery)) or 0)


async def _write(p, actor, n):
    await examples.submit(p, actor, task_code="toy", fields={"text": f"a good day {n}", "label": "bad"})


async def test_the_registrant_changes_a_webhook_and_owners_pause_it(platform, people):
    made = await webhooks.create(platform, people["registrant"], "toy", "https://hooks.example.org/a", ["modelFooled"])
    hook = made.webhook
    changed = await webhooks.change(
        platform,
        people["registrant"],
        hook.id,
        url="https://hooks.example.org/b",
        events=["exampleCreated", "modelFooled"],
        description="both",
    )
    assert (changed.url, changed.events, changed.description) == (
        "https://hooks.example.org/b",
        ["exampleCreated", "modelFooled"],
        "both",
    )
    with pytest.raises(Forbidden):  # owners see and pause it, but do not redirect it
        await webhooks.change(platform, people["owner"], hook.id, url="https://elsewhere.example.org/")
    with pytest.raises(NotFound):
        await webhooks.change(platform, people["other"], hook.id, active=False)
    with pytest.raises(InvalidInput):
        await webhooks.change(platform, people["registrant"], hook.id, events=["nothing"])

    # the registrant's own examples: modelFooled of someone else's would not reach them (services.visibility)
    await _write(platform, people["registrant"], 0)
    assert await _deliveries(platform) == 2  # exampleCreated and modelFooled
    paused = await webhooks.change(platform, people["owner"], hook.id, active=False)
    assert paused.active is False
    await _write(platform, people["registrant"], 1)
    assert await _deliveries(platform) == 2  # none while paused
    await webhooks.change(platform, people["registrant"], hook.id, active=True)
    await _write(platform, people["registrant"], 2)
    assert await _deliveries(platform) == 4


UPDATE = """mutation($input: UpdateWebhookInput!) { updateWebhook(input: $input) {
  __typename ... on WebhookUpdated { webhook { id url events active description } } ... on Error { message } } }"""


async def test_update_webhook_over_graphql(gql, platform, people):
    from dynaforge.services import auth

    made = await webhooks.create(platform, people["registrant"], "toy", "https://hooks.example.org/a", ["roundChanged"])
    gql.token = (await auth.create_token(platform, people["registrant"], name="t"))[1]
    answer = await gql(
        UPDATE, {"input": {"id": gid("Webhook", made.webhook.id), "active": False, "description": "later"}}
    )
    assert answer["updateWebhook"]["webhook"] == {
        "id": gid("Webhook", made.webhook.id),
        "url": "https://hooks.example.org/a",
        "events": ["ROUND_CHANGED"],
        "active": False,
        "description": "later",
    }
    events = {"id": gid("Webhook", made.webhook.id), "events": ["EXAMPLE_CREATED", "MODEL_FOOLED"]}
    retuned = (await gql(UPDATE, {"input": events}))["updateWebhook"]["webhook"]
    assert retuned["events"] == ["EXAMPLE_CREATED", "MODEL_FOOLED"]
    refused = (await gql(UPDATE, {"input": {"id": gid("Webhook", 0)}}))["updateWebhook"]
    assert refused["__typename"] == "InvalidInput"
