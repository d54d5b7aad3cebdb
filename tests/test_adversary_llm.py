"""The ``llm`` adversary against a fake OpenAI-compatible server on loopback: what it sends (model, key, instructions,
context, draft, earlier fooling examples), what it keeps (valid candidates with the target's verdicts, within the
budget), and how it fails (off without a URL, refused by the outbound policy, HTTP errors, timeouts, nonsense)."""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from dynaforge.adversaries.base import AdversaryFailed, AttackRequest, Oracle
from dynaforge.adversaries.llm import LLMAdversary, build_messages, edits_between, parse_candidates
from dynaforge.services import examples
from dynaforge.settings import Settings
from dynaforge.tasks import outputs
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import ChoiceField, Role, TextField

KEY = "sk-test-secret-key"


class Sentiment(Task):
    code = "llm-toy"
    name = "LLM Toy"
    instructions = "Write a sentence and say whether its sentiment is positive or negative."
    labels = ("positive", "negative")
    fields = (
        TextField(name="topic", role=Role.CONTEXT, required=False, max_length=200),
        TextField(name="text", role=Role.INPUT, max_length=200),
        ChoiceField(name="label", role=Role.TARGET),
    )


TASK = Sentiment()
CONTEXT = {"topic": "restaurants"}
DRAFT = {"text": "The soup was good.", "label": "positive"}


def keyword_target(model_input: dict[str, Any]) -> dict[str, Any]:
    """The fake target: positive exactly when the text says 'good'."""
    positive = "good" in model_input["text"].lower()
    p = 0.9 if positive else 0.2
    return {"label": "positive" if positive else "negative", "probabilities": {"positive": p, "negative": 1 - p}}


def make_oracle(max_queries: int = 16, time_limit_s: float = 30.0, cancelled=None) -> Oracle:
    async def predict(inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        predict.calls.append(inputs)
        return [
            [{"model": "fake", "prediction": TASK.read_model_output(keyword_target(i)), "latency_ms": 0.0}]
            for i in inputs
        ]

    predict.calls = []

    def judge(members, ex, ctx):
        return outputs.judge(TASK, "majority", members, ex, ctx)

    oracle = Oracle(
        TASK, CONTEXT, predict, judge, max_queries=max_queries, time_limit_s=time_limit_s, cancelled=cancelled
    )
    oracle.predict_calls = predict.calls  # type: ignore[attr-defined]
    return oracle


def completion(content: str, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }


def answer(*candidates: dict[str, Any]) -> dict[str, Any]:
    return completion(json.dumps({"candidates": list(candidates)}))


class FakeLLM:
    """An OpenAI-compatible server on 127.0.0.1: records every request, answers ``reply`` (status, body, delay)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: tuple[int, bytes | dict[str, Any], float] = (200, answer(), 0.0)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                fake.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(raw),
                    }
                )
                status, body, delay = fake.reply
                time.sleep(delay)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    if 300 <= status < 400:
                        self.send_header("location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (the timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def llm():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture
def fake(llm):
    llm.requests.clear()
    llm.reply = (200, answer(), 0.0)
    return llm


def settings_for(url: str | None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_adversary_url": url,
        "llm_adversary_api_key": KEY,
        "llm_adversary_model": "fake-model",
        "outbound_allow": "127.0.0.1",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def make_request(settings: Settings | None, *, draft=DRAFT, fooled_before=(), max_candidates: int = 3) -> AttackRequest:
    return AttackRequest(
        task=TASK,
        context=dict(CONTEXT),
        draft=dict(draft) if draft is not None else None,
        rng=random.Random(7),
        max_candidates=max_candidates,
        fooled_before=list(fooled_before),
        settings=settings,
    )


FOOLED_BEFORE = [
    {"text": "Not good at all, sadly.", "label": "negative"},
    {"text": "I expected it to be good; it was.", "label": "positive"},
]


async def test_request_carries_the_prompt_and_verdicts_come_back(fake):
    fake.reply = (
        200,
        answer(
            {"fields": {"text": "The soup was far from good.", "label": "negative"}, "rationale": "negated praise"},
            {"fields": {"text": "The soup was good and hot.", "label": "positive"}, "rationale": "no keyword " * 60},
            {"fields": {"text": "The soup was bland.", "label": "meh"}, "rationale": "unknown label"},
            {"fields": {"label": "negative"}, "rationale": "missing text"},
            {"fields": {"text": "The soup was good.", "label": "negative"}, "rationale": "only the gold changed"},
            {"fields": {"text": "The soup was far from good.", "label": "negative"}, "rationale": "a repeat"},
            "not an object",
        ),
        0.0,
    )
    oracle = make_oracle()
    request = make_request(settings_for(fake.url), fooled_before=FOOLED_BEFORE)
    found = await LLMAdversary().attack(request, oracle)

    assert len(fake.requests) == 1
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0.7
    assert body["response_format"] == {"type": "json_object"}
    assert isinstance(body["seed"], int)
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert TASK.instructions in system["content"]
    assert '"positive", "negative"' in system["content"]
    assert "text" in system["content"] and "label" in system["content"]
    assert "restaurants" in user["content"]
    assert "The soup was good." in user["content"] and "minimal edits" in user["content"]
    for example in FOOLED_BEFORE:
        assert example["text"] in user["content"]
    assert KEY not in json.dumps(body)

    # The unknown label, the missing field, the draft with a new label only, the repeat and the non-object are dropped.
    assert [c.fields for c in found] == [
        {"text": "The soup was far from good.", "label": "negative"},
        {"text": "The soup was good and hot.", "label": "positive"},
    ]
    first, second = found
    assert first.verdict is not None and first.verdict.fooled  # "good" fools the keyword target
    assert first.verdict.prediction["label"] == "positive"
    assert first.verdict.gold_probability == pytest.approx(0.1)
    assert first.rationale == "negated praise"
    assert first.edits == ("label: 'positive' -> 'negative'", "text: '' -> 'far from'")
    assert second.verdict is not None and not second.verdict.fooled
    assert second.verdict.gold_probability == pytest.approx(0.9)
    assert len(second.rationale) <= 300 and second.rationale.endswith("…")
    assert oracle.queries == 2 and oracle.calls == 1  # one batch


async def test_budget_is_honoured(fake):
    fake.reply = (
        200,
        answer(*({"fields": {"text": f"Dish number {i} was odd.", "label": "negative"}} for i in range(6))),
        0.0,
    )
    oracle = make_oracle(max_queries=2)
    found = await LLMAdversary().attack(make_request(settings_for(fake.url), max_candidates=5), oracle)
    assert len(found) == 2 and oracle.queries == 2 and oracle.remaining == 0
    assert "at most 2 candidates" in fake.requests[0]["body"]["messages"][0]["content"]
    # No budget left: nothing is asked, of the endpoint or the target.
    assert await LLMAdversary().attack(make_request(settings_for(fake.url)), oracle) == []
    assert len(fake.requests) == 1


async def test_without_a_draft_it_writes_from_the_context(fake):
    fake.reply = (200, answer({"fields": {"text": "Service was slow.", "label": "negative"}, "rationale": "r"}), 0.0)
    found = await LLMAdversary().attack(make_request(settings_for(fake.url), draft=None), make_oracle())
    assert [c.fields for c in found] == [{"text": "Service was slow.", "label": "negative"}]
    assert found[0].edits == ()
    user = fake.requests[0]["body"]["messages"][1]["content"]
    assert "draft" not in user and "new example" in user


async def test_no_key_no_authorization_header(fake):
    await LLMAdversary().attack(make_request(settings_for(fake.url, llm_adversary_api_key=None)), make_oracle())
    assert "authorization" not in fake.requests[0]["headers"]


def test_off_without_a_url():
    adversary = LLMAdversary()
    assert adversary.unsuitable(TASK, None) == "off: set DYNAFORGE_LLM_ADVERSARY_URL to an OpenAI-compatible endpoint"
    assert adversary.unsuitable(TASK, settings_for(None)).startswith("off: set DYNAFORGE_LLM_ADVERSARY_URL")
    assert adversary.unsuitable(TASK, settings_for("https://llm.example.org/v1")) is None
    assert adversary.name == "llm" and not adversary.needs_draft and adversary.assists and adversary.generates


async def test_off_attack_fails():
    with pytest.raises(AdversaryFailed, match="DYNAFORGE_LLM_ADVERSARY_URL"):
        await LLMAdversary().attack(make_request(settings_for(None)), make_oracle())


async def test_loopback_refused_unless_allowlisted(fake):
    with pytest.raises(AdversaryFailed, match="DYNAFORGE_OUTBOUND_ALLOW") as caught:
        await LLMAdversary().attack(make_request(settings_for(fake.url, outbound_allow="")), make_oracle())
    assert "127.0.0.1" not in str(caught.value)  # the message reaches annotators: no address
    assert fake.requests == []


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((500, b'{"error": "' + b"x" * 5000 + b'"}', 0.0), "HTTP 500"),
        ((401, b"{}", 0.0), "DYNAFORGE_LLM_ADVERSARY_API_KEY"),
        ((302, b"", 0.0), "redirects are not followed"),
        ((200, b"<html>not json</html>", 0.0), "not JSON"),
        ((200, {"unexpected": True}, 0.0), "choices"),
        ((200, completion("Sorry, I cannot help with that."), 0.0), "not a JSON object"),
        ((200, completion('{"candidates": [{"fields": {"te'), 0.0), "not a JSON object"),
        ((200, completion('{"candidates": [{"fields": {"te', finish_reason="length"), 0.0), "token limit"),
        ((200, completion('{"examples": []}'), 0.0), '"candidates" list'),
    ],
)
async def test_failures_are_clear(fake, reply, message):
    fake.reply = reply
    with pytest.raises(AdversaryFailed, match=message) as caught:
        await LLMAdversary().attack(make_request(settings_for(fake.url)), make_oracle())
    assert len(str(caught.value)) < 300 and "xxxx" not in str(caught.value) and KEY not in str(caught.value)


async def test_timeout_fails_clearly(fake):
    fake.reply = (200, answer(), 1.5)
    started = time.monotonic()
    with pytest.raises(AdversaryFailed, match=r"did not answer within 0\.3 s.*DYNAFORGE_LLM_ADVERSARY_TIMEOUT_S"):
        await LLMAdversary().attack(make_request(settings_for(fake.url, llm_adversary_timeout_s=0.3)), make_oracle())
    assert time.monotonic() - started < 1.4


async def test_the_attacks_own_deadline_stops_it_quietly(fake):
    fake.reply = (200, answer(), 1.5)
    oracle = make_oracle(time_limit_s=0.3)
    assert await LLMAdversary().attack(make_request(settings_for(fake.url)), oracle) == []
    assert oracle.queries == 0


async def test_cancelled_before_the_request(fake):
    oracle = make_oracle(cancelled=lambda: True)
    assert await LLMAdversary().attack(make_request(settings_for(fake.url)), oracle) == []
    assert fake.requests == []


async def test_fenced_json_is_accepted(fake):
    content = (
        "```json\n" + json.dumps({"candidates": [{"fields": {"text": "Not good.", "label": "negative"}}]}) + "\n```"
    )
    fake.reply = (200, completion(content), 0.0)
    found = await LLMAdversary().attack(make_request(settings_for(fake.url)), make_oracle())
    assert [c.fields for c in found] == [{"text": "Not good.", "label": "negative"}]
    assert found[0].verdict is not None and found[0].verdict.fooled


def test_parse_candidates_tolerates_fences_and_prose():
    inner = {"candidates": [{"fields": {"text": "a", "label": "positive"}}]}
    assert parse_candidates("```\n" + json.dumps(inner) + "\n```") == inner["candidates"]
    assert parse_candidates("Here they are: " + json.dumps(inner) + " Enjoy.") == inner["candidates"]
    assert parse_candidates(json.dumps(inner["candidates"])) == inner["candidates"]


def test_build_messages_is_pure_and_bounded():
    many = [{"text": f"Example {i} was good.", "label": "positive", "internal_id": 9} for i in range(8)]
    request = make_request(None, draft=None, fooled_before=many)
    messages = build_messages(request, 4)
    assert messages == build_messages(request, 4)
    user = messages[1]["content"]
    assert "Example 4 was good." in user and "Example 5 was good." not in user  # at most five
    assert "internal_id" not in user
    assert '"label"' not in user  # a gold field never enters the prompt, whoever passed it in
    assert "at most 4 candidates" in messages[0]["content"]
    # Without a context, the candidate writes the context fields too.
    no_context = AttackRequest(task=TASK, context={}, draft=None, rng=random.Random(0))
    assert "- topic:" in build_messages(no_context, 1)[0]["content"]
    assert "- topic:" not in messages[0]["content"]


def test_edits_between():
    assert edits_between(None, {"text": "x"}) == ()
    assert edits_between({"text": "a b c", "label": "positive"}, {"text": "a d c", "label": "positive"}) == (
        "text: 'b' -> 'd'",
    )


# --------------------------------------------------------------------------- on the platform (SQLite and PostgreSQL)


def _prompt_examples(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The examples that fooled the target before, as one request's prompt showed them."""
    user = request["body"]["messages"][1]["content"]
    marker = "Examples that fooled the target model before"
    if marker not in user:
        return []
    section = user.split(marker, 1)[1].split("\n\n", 1)[0]
    return [json.loads(line) for line in section.splitlines()[1:]]


async def test_the_prompt_holds_no_one_elses_gold_and_copies_are_dropped(platform, fake):
    """Another user's accepted example, unpublished, never enters a prompt; the asker's own and a published one do,
    without their gold fields; and a candidate that copies a stored example (case and spacing aside) is dropped,
    however the LLM came by it."""
    from sqlmodel import select as sql_select
    from support import make_user

    from dynaforge.db.models import AdversaryRun, Dataset, DatasetAccess, DatasetItem, TaskRow
    from dynaforge.services import adversaries as adversary_service
    from dynaforge.services import validation

    platform.settings.llm_adversary_url = fake.url
    platform.settings.llm_adversary_model = "fake-model"
    platform.settings.outbound_allow = "127.0.0.1"
    alice, bob, carol = [await make_user(platform, n) for n in ("alice", "bob", "carol")]
    admin = await make_user(platform, "olga", admin=True)

    async def accepted(actor, text: str, note: str) -> int:
        fields = {"text": text, "label": "bad", "note": note}
        outcome = await examples.submit(platform, actor, task_code="toy", fields=fields)
        assert outcome.example.fooled  # 'good' in the text, gold bad: the keyword model is wrong
        await validation.validate(platform, admin, outcome.example.id, "CORRECT")
        return outcome.example.id

    await accepted(alice, "good riddance", "hers")
    await accepted(bob, "good grief", "his")
    published = await accepted(carol, "good heavens", "public")
    async with platform.db.write() as s:
        task_id = await s.scalar(sql_select(TaskRow.id).where(TaskRow.code == "toy"))
        split = Dataset(task_id=task_id, name="r1-train", access=DatasetAccess.STANDARD, source="round", size=1)
        s.add(split)
        await s.flush()
        s.add(DatasetItem(dataset_id=split.id, position=0, example_id=published, fields={}))

    fake.reply = (
        200,
        answer(
            {"fields": {"text": "  GOOD   Grief ", "label": "bad"}, "rationale": "Bob's, respaced"},
            {"fields": {"text": "a good mess", "label": "bad"}, "rationale": "new"},
        ),
        0.0,
    )
    found = await adversary_service.suggest_edits(
        platform, alice, task_code="toy", draft={"text": "a good day", "label": "good"}, adversary="llm"
    )
    assert [s.fields for s in found.suggestions] == [{"text": "a good mess", "label": "bad"}]
    shown = _prompt_examples(fake.requests[-1])
    assert sorted(e["text"] for e in shown) == ["good heavens", "good riddance"]  # not Bob's
    assert all("label" not in e for e in shown) and {e.get("note") for e in shown} == {"hers", "public"}

    # A generation run's prompt: published examples only (its candidates go to validators, not to the owner).
    run = await adversary_service.generate(platform, admin, task_code="toy", adversary="llm", budget=2)
    await adversary_service.wait(platform, run.id)
    async with platform.db.session() as s:
        assert (await s.get(AdversaryRun, run.id)).status == "DONE"
    assert [e["text"] for e in _prompt_examples(fake.requests[-1])] == ["good heavens"]
