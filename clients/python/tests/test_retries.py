"""Which failures are retried, without a server: an httpx transport that answers as a failing proxy or server would.

Reads (queries) are retried on connection problems, timeouts and 429/502/503/504; writes (mutations) only when the
connection could not be opened, so that a mutation never runs twice. The live-event stream's choice between
reconnecting and raising is checked here too."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from dynaforge_client import AsyncClient, errors
from dynaforge_client.events import EventStream

ME = {"data": {"me": {"id": "VXNlcjox", "username": "ann", "isAdmin": False}}}
CREATED = {
    "data": {
        "createExample": {
            "__typename": "InvalidInput",
            "message": "Invalid input",
            "fieldErrors": [{"field": ["statement"], "code": "LENGTH", "rule": "min_length", "message": "too short"}],
        }
    }
}


def client_with(*answers) -> tuple[AsyncClient, list[dict]]:
    """A client whose requests get ``answers`` in turn (a response dict with status/json/headers, or an exception)."""
    sent: list[dict] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer.get("status", 200), json=answer.get("json"), headers=answer.get("headers"))

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = AsyncClient("http://dynaforge.test", "token", http_client=http, retries=2)
    return client, sent


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    async def instant(_delay):
        return None

    monkeypatch.setattr("dynaforge_client._transport.asyncio.sleep", instant)
    monkeypatch.setattr("dynaforge_client.events.asyncio.sleep", instant)


async def test_reads_are_retried_on_unavailable_and_connection_errors():
    client, sent = client_with(
        {"status": 503, "json": {"errors": [{"message": "down"}]}},
        httpx.ConnectError("refused"),
        {"json": ME},
    )
    assert (await client.me()).username == "ann"
    assert len(sent) == 3


async def test_reads_give_up_after_the_retries():
    client, sent = client_with(*[{"status": 502, "json": None}] * 3)
    with pytest.raises(errors.TransportError) as caught:
        await client.me()
    assert caught.value.status == 502 and len(sent) == 3


async def test_rate_limited_reads_wait_and_retry():
    limited = {"errors": [{"message": "slow down", "extensions": {"code": "RATE_LIMITED"}}], "data": None}
    client, sent = client_with({"json": limited}, {"json": ME})
    assert (await client.me()).username == "ann" and len(sent) == 2


async def test_writes_are_not_retried_once_sent():
    client, sent = client_with({"status": 503, "json": None}, {"json": CREATED})
    with pytest.raises(errors.TransportError):
        await client.create_example("sentiment", {"statement": "x"})
    assert len(sent) == 1  # the server may have stored it: never sent twice
    client, sent = client_with(httpx.ReadTimeout("no answer"), {"json": CREATED})
    with pytest.raises(errors.TransportError):
        await client.create_example("sentiment", {"statement": "x"})
    assert len(sent) == 1


async def test_writes_are_retried_when_the_connection_never_opened():
    client, sent = client_with(httpx.ConnectError("refused"), {"json": CREATED})
    with pytest.raises(errors.InvalidInput) as caught:
        await client.create_example("sentiment", {"statement": "x"})
    assert len(sent) == 2
    (problem,) = caught.value.field_errors
    assert (problem.path, problem.code, problem.rule) == ("statement", "LENGTH", "min_length")
    assert "statement: too short (min_length)" in str(caught.value)


async def test_server_errors_are_typed_and_not_retried():
    forbidden = {"errors": [{"message": "owners only", "extensions": {"code": "FORBIDDEN"}}], "data": None}
    client, sent = client_with({"json": forbidden}, {"json": ME})
    with pytest.raises(errors.Forbidden) as caught:
        await client.me()
    assert caught.value.message == "owners only" and len(sent) == 1


async def test_a_used_up_allowance_is_its_own_error_and_not_retried():
    """QuotaExceeded (a query's error code, or a mutation's union member) says which allowance and when it frees up;
    unlike RateLimited, a read is not retried for it."""
    used = {
        "errors": [
            {
                "message": "the cap is reached",
                "extensions": {
                    "code": "QUOTA_EXCEEDED",
                    "quota": "EXAMPLES_PER_DAY",
                    "limit": 2,
                    "resetsInSeconds": 60.5,
                },
            }
        ],
        "data": None,
    }
    client, sent = client_with({"json": used}, {"json": ME})
    with pytest.raises(errors.QuotaExceeded) as caught:
        await client.me()
    assert (caught.value.quota, caught.value.limit, caught.value.retry_after) == ("EXAMPLES_PER_DAY", 2, 60.5)
    assert len(sent) == 1 and not isinstance(caught.value, errors.RateLimited)

    class Member:
        typename__ = "QuotaExceeded"
        message = "delete one first"
        quota = "WEBHOOKS_PER_TASK"
        limit = 10
        resets_in_seconds = None

    member = errors.from_member(Member())
    assert isinstance(member, errors.QuotaExceeded)
    assert (member.quota, member.limit, member.retry_after, member.code) == (
        "WEBHOOKS_PER_TASK",
        10,
        None,
        "QUOTA_EXCEEDED",
    )


def stream_of(*connections) -> EventStream:
    """A stream whose successive connections yield the given items, then fail with the given exception (or end)."""
    plan = list(connections)
    afters: list = []

    async def open_(after):
        afters.append(after)
        items, failure = plan.pop(0)
        for item in items:
            yield item
        if failure is not None:
            raise failure

    stream = EventStream(open_, key=lambda item: item["id"], max_attempts=3)
    stream.afters = afters  # type: ignore[attr-defined]
    return stream


async def collect(stream: EventStream, count: int) -> list:
    out = []
    async for item in stream:
        out.append(item)
        if len(out) == count:
            break
    return out


async def test_stream_resumes_after_the_last_event_and_drops_repeats():
    stream = stream_of(
        ([{"id": "a"}, {"id": "b"}], OSError("connection reset")),
        ([{"id": "b"}, {"id": "c"}], None),  # a repeat is dropped
        ([{"id": "d"}], None),
    )
    assert [i["id"] for i in await collect(stream, 3)] == ["a", "b", "c"]
    assert stream.afters == [None, "b"] and stream.reconnects == 1 and stream.gaps == []
    assert stream.last_id == "c"


async def test_stream_records_a_gap_when_it_cannot_resume(caplog):
    stream = stream_of(([], OSError("refused")), ([{"id": "a"}], None))
    with caplog.at_level(logging.WARNING, logger="dynaforge_client"):
        assert [i["id"] for i in await collect(stream, 1)] == ["a"]
    assert len(stream.gaps) == 1 and "no event had been received" in stream.gaps[0].reason
    marked = [r for r in caplog.records if hasattr(r, "dynaforge_gap")]
    assert [r.dynaforge_gap for r in marked] == stream.gaps  # what `dynaforge-client watch` filters its logs by


async def test_stream_raises_what_a_reconnect_would_not_fix():
    from dynaforge_client._generated.exceptions import GraphQLClientGraphQLMultiError

    refused = GraphQLClientGraphQLMultiError.from_errors_dicts(
        [{"message": "no task nope", "extensions": {"code": "NOT_FOUND"}}]
    )
    stream = stream_of(([], refused))
    with pytest.raises(errors.NotFound):
        await collect(stream, 1)


async def test_stream_gives_up_after_max_attempts():
    stream = stream_of(*[([], OSError("refused"))] * 5)
    with pytest.raises(errors.TransportError, match="gave up after 3"):
        await collect(stream, 1)


async def test_a_late_example_does_not_come_twice():
    stream = stream_of(
        ([{"id": "e5"}, {"id": "e3"}], OSError("reset")),  # e3 was pending and fooled late: it comes after e5
        ([{"id": "e5"}, {"id": "e6"}], None),  # resumed after e3, the server replays e5 again: dropped
    )
    assert [i["id"] for i in await collect(stream, 3)] == ["e5", "e3", "e6"]
    assert stream.afters == [None, "e3"] and stream.last_id == "e6"


async def test_a_refused_document_is_raised_not_retried():
    from dynaforge_client._generated.exceptions import GraphQLClientGraphQLMultiError

    refused = GraphQLClientGraphQLMultiError.from_errors_dicts([{"message": "Unknown argument 'after'"}])
    stream = stream_of(([], refused), ([{"id": "a"}], None))
    with pytest.raises(errors.DynaforgeError, match="Unknown argument"):
        await collect(stream, 1)
    assert stream.afters == [None]


async def test_a_dropped_subscriber_reconnects():
    from dynaforge_client._generated.exceptions import GraphQLClientGraphQLMultiError

    dropped = GraphQLClientGraphQLMultiError.from_errors_dicts(
        [{"message": "fell more than 1000 events behind", "extensions": {"code": "SERVICE_UNAVAILABLE"}}]
    )
    stream = stream_of(([{"id": "a"}], dropped), ([{"id": "b"}], None))
    assert [i["id"] for i in await collect(stream, 2)] == ["a", "b"]
    assert stream.afters == [None, "a"]


async def test_closing_a_stream_ends_it():
    stream = stream_of(([{"id": "a"}, {"id": "b"}], None))
    async with stream:
        async for item in stream:
            assert item["id"] == "a"
            break
    with pytest.raises(StopAsyncIteration):
        await stream.__aiter__().__anext__()
