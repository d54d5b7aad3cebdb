"""Live ``modelFooled`` events through the client against a real server: resuming without loss or repeats after the
connection is cut (a TCP proxy the test controls), telling that events may have been missed, redaction for other
users, and the blocking iterator."""

from __future__ import annotations

import asyncio

import pytest

from dynaforge_client import AsyncClient, Client, errors

FOOLING = "I adored this gentle, funny and beautiful film, number {}."


async def fool(client: AsyncClient, tag: str) -> str:
    example = await client.create_example("sentiment", {"statement": FOOLING.format(tag), "label": "negative"})
    assert example.fooled is True
    return example.id


async def next_event(iterator, timeout: float = 60.0):
    return await asyncio.wait_for(iterator.__anext__(), timeout)


async def test_resumes_after_a_cut_without_loss_or_repeats(server, proxy, unique):
    async with AsyncClient(server.url, server.token) as writer, AsyncClient(proxy.url, server.token) as watcher:
        start = await fool(writer, f"{unique}-0")
        stream = watcher.model_fooled("sentiment", after=start, max_backoff=0.5)
        events = stream.__aiter__()
        first = await fool(writer, f"{unique}-1")  # replayed or live: either way it comes, once
        assert (await next_event(events)).id == first

        proxy.cut()  # the websocket dies; reconnecting is refused until restore()
        missed = [await fool(writer, f"{unique}-{n}") for n in (2, 3)]
        await writer.create_example("sentiment", {"statement": f"Lovely and warm {unique}.", "label": "positive"})
        await asyncio.sleep(1.0)
        proxy.restore()

        got = [(await next_event(events)).id for _ in missed]
        assert got == missed  # replayed oldest first, after the last one received
        live = await fool(writer, f"{unique}-4")
        assert (await next_event(events)).id == live
        assert stream.reconnects >= 1 and stream.gaps == [] and stream.last_id == live
        await events.aclose()


async def test_a_reconnect_before_the_first_event_is_reported_as_a_gap(server, proxy, unique):
    async with AsyncClient(server.url, server.token) as writer, AsyncClient(proxy.url, server.token) as watcher:
        stream = watcher.model_fooled("sentiment", max_backoff=0.5)
        events = stream.__aiter__()
        pending = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(1.5)
        proxy.cut()
        await asyncio.sleep(0.5)
        proxy.restore()
        await asyncio.sleep(2.0)  # reconnected (backoff at most 0.5 s)
        created = await fool(writer, f"{unique}-gap")
        assert (await asyncio.wait_for(pending, 60)).id == created
        assert stream.reconnects >= 1 and len(stream.gaps) >= 1
        assert "missed" in stream.gaps[0].reason
        await events.aclose()


async def test_other_users_get_only_their_own_fooling_examples(server, unique):
    """A fooling example's event tells who cannot see its gold what the gold is (on a two-class task, the label the
    target did not give): others' examples never reach a plain user's modelFooled, their own come whole."""
    async with AsyncClient(server.url, server.token) as writer, AsyncClient(server.url) as researcher:
        await researcher.register(f"rs{unique}", f"rs{unique}@example.org", "researcher password 1")
        start = await fool(writer, f"{unique}-r0")
        events = researcher.model_fooled("sentiment", after=start).__aiter__()
        await fool(writer, f"{unique}-r1")  # someone else's: withheld
        own = await fool(researcher, f"{unique}-r2")
        event = await next_event(events)
        assert event.id == own and event.fooled is True and event.fields["label"] == "negative"
        assert event.fields["statement"] == FOOLING.format(f"{unique}-r2")
        await events.aclose()


def test_blocking_iterator(server, unique):
    with Client(server.url, server.token) as client:
        start = client.create_example("sentiment", {"statement": FOOLING.format(f"{unique}-b0"), "label": "negative"})
        stream = client.model_fooled("sentiment", after=start)
        created = client.create_example("sentiment", {"statement": FOOLING.format(f"{unique}-b1"), "label": "negative"})
        assert next(stream).id == created.id
        assert stream.last_id == created.id and stream.gaps == []
        stream.close()


def test_a_blocking_stream_closes_after_a_timeout(server, unique, caplog):
    """``next(timeout=)`` that times out leaves the read going: the next call gets the event, and ``close()`` right
    after a timeout ends the stream without an error (the read is cancelled on the client's loop first)."""
    with Client(server.url, server.token) as client:
        start = client.create_example("sentiment", {"statement": FOOLING.format(f"{unique}-t0"), "label": "negative"})
        stream = client.model_fooled("sentiment", after=start)
        with pytest.raises(TimeoutError):
            stream.next(timeout=0.5)
        created = client.create_example("sentiment", {"statement": FOOLING.format(f"{unique}-t1"), "label": "negative"})
        assert stream.next(timeout=60).id == created.id
        with pytest.raises(TimeoutError):
            stream.next(timeout=0.5)
        stream.close()  # was: RuntimeError: aclose(): asynchronous generator is already running
        with (
            Client(server.url, server.token) as other,
            other.model_fooled("sentiment", after=created.id) as again,
            pytest.raises(TimeoutError),
        ):
            again.next(timeout=0.3)  # closed by the with block, after the timeout
    assert not [r for r in caplog.records if r.name == "asyncio"], [r.getMessage() for r in caplog.records]


async def test_a_refused_subscription_is_raised_at_once(server):
    """Errors a new connection would not fix come back as the typed exception, not as endless reconnects."""
    async with AsyncClient(server.url, server.token) as client:
        stream = client.model_fooled("sentiment", after="not-an-id")
        with pytest.raises(errors.InvalidInput) as caught:
            await next_event(stream.__aiter__(), timeout=30)
        assert [e.path for e in caught.value.field_errors] == ["after"] and stream.reconnects == 0
        with pytest.raises(errors.NotFound):
            await next_event(client.model_fooled("no-such-task").__aiter__(), timeout=30)
    async with AsyncClient(server.url) as anonymous:
        with pytest.raises(errors.NotAuthenticated):
            await next_event(anonymous.model_fooled("sentiment").__aiter__(), timeout=30)
