"""Limits and abuse, one test each, over HTTP against the app: per-user rate limits (examples, validations, exports,
submissions, logins), body size, field lengths, page sizes, GraphQL depth, aliases and tokens, and introspection and
GraphiQL in production settings. (Other files test each limit's details; this one shows every limit answers with a
typed error that says what to do, and that nothing is written.)"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select
from support import GraphQLClient, make_user, register_user

from dynaforge.app import create_app
from dynaforge.db.models import Example
from dynaforge.errors import InvalidCredentials, QuotaExceeded, RateLimited
from dynaforge.services import auth, datasets, submissions, validation
from dynaforge.services import examples as example_service
from dynaforge.services.actor import Actor
from dynaforge.services.ratelimit import client_key

CREATE = """mutation($f: JSON!) { createExample(input: {taskCode: "toy", fields: $f}) { __typename
  ... on Error { message } ... on RateLimited { retryAfterSeconds }
  ... on InvalidInput { fieldErrors { field rule } } } }"""
LOGIN = """mutation($u: String!, $p: String!) { login(input: {username: $u, password: $p}) { __typename
  ... on Error { message } } }"""


async def _examples(p) -> int:
    async with p.db.session() as s:
        return await s.scalar(select(func.count()).select_from(Example))


async def test_examples_per_minute(gql, platform):
    platform.settings.examples_per_minute = 2
    token, _ = await register_user(gql, "fast1")
    answers = [
        (await gql(CREATE, {"f": {"text": f"text {i}", "label": "bad"}}, token=token))["createExample"]
        for i in range(3)
    ]
    assert [a["__typename"] for a in answers[:2]] != ["RateLimited"] * 2
    assert answers[2]["__typename"] == "RateLimited" and answers[2]["retryAfterSeconds"] > 0
    assert await _examples(platform) == 2


async def test_validations_per_minute(gql, platform):
    platform.settings.examples_per_minute = 100
    platform.settings.validations_per_minute = 1
    author, _ = await register_user(gql, "author1")
    voter, _ = await register_user(gql, "voter1")
    ids = [
        (
            await gql(
                'mutation($f: JSON!) { createExample(input: {taskCode: "toy", fields: $f}) { ... on ExampleCreated '
                "{ example { id } } } }",
                {"f": {"text": f"good {i}", "label": "bad"}},
                token=author,
            )
        )["createExample"]["example"]["id"]
        for i in range(2)
    ]
    vote = "mutation($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename } }"
    assert (await gql(vote, {"id": ids[0]}, token=voter))["validateExample"]["__typename"] == "ValidationRecorded"
    assert (await gql(vote, {"id": ids[1]}, token=voter))["validateExample"]["__typename"] == "RateLimited"


async def test_submissions_per_day(platform):
    from dynaforge.services import auth

    platform.settings.examples_per_minute = 100
    user = await auth.create_user(
        platform, Actor.system(), username="modeller", email="m@example.org", password="long enough pw"
    )
    builder = Actor(user.id, "modeller", False)
    admin = Actor.system()
    owner_user = await auth.create_user(
        platform, Actor.system(), username="own", email="o@example.org", password="long enough pw", is_admin=True
    )
    owner = Actor(owner_user.id, "own", True)
    for i in range(3):
        made = await example_service.submit(
            platform, builder, task_code="toy", fields={"text": f"good {i}", "label": "good"}
        )
        await validation.validate(platform, owner, made.example.id, "CORRECT")  # nobody validates their own
    await datasets.build_from_round(platform, admin, "toy", 1)
    config = {"callable": "toy_plugin:keyword_model"}
    await submissions.submit_model(platform, builder, task_code="toy", name="one", backend="python", config=config)
    with pytest.raises(QuotaExceeded, match="submissions per user in 24 hours") as refused:
        for i in range(5):
            await submissions.submit_model(
                platform, builder, task_code="toy", name=f"more{i}", backend="python", config=config
            )
    assert refused.value.quota == "SUBMISSIONS_PER_DAY" and refused.value.limit == 3
    assert 0 < (refused.value.retry_after_s or 0) <= 24 * 3600  # when the oldest attempt leaves the window


async def test_exports_per_minute(gql, client, platform):
    platform.settings.exports_per_minute = 1
    token, _ = await register_user(gql, "reader1")
    headers = {"Authorization": f"Bearer {token}"}
    refused = await client.get("/export/toy", params={"status": "CREATED"}, headers=headers)
    assert refused.status_code == 403  # an export refused for another reason is not counted
    assert (await client.get("/export/toy", headers=headers)).status_code == 200
    limited = await client.get("/export/toy", headers=headers)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "RATE_LIMITED"
    assert int(limited.headers["Retry-After"]) >= 1 and "exports" in limited.json()["error"]["message"]


async def test_logins_are_limited_per_account_and_per_client(gql, platform):
    platform.settings.logins_per_minute = 3
    platform.settings.logins_per_minute_per_client = 5
    await register_user(gql, "target1")
    answers = [
        (await gql(LOGIN, {"u": "target1", "p": "wrong guess"}, token=None))["login"]["__typename"] for _ in range(3)
    ]
    assert answers == ["InvalidCredentials"] * 3
    # the fourth attempt is refused before the password is checked: even the right one
    refused = (await gql(LOGIN, {"u": "target1", "p": "correct horse battery"}, token=None))["login"]
    assert refused["__typename"] == "RateLimited" and "this account" in refused["message"]
    # trying many accounts from one address hits the per-client limit
    spread = [
        (await gql(LOGIN, {"u": f"someone{i}", "p": "guess"}, token=None))["login"]["__typename"] for i in range(3)
    ]
    assert spread[:1] == ["InvalidCredentials"] and spread[-1] == "RateLimited"


async def test_failed_logins_elsewhere_never_lock_the_owner_out(platform):
    """Failures count per account and address together: guesses from many addresses lock out those addresses, not
    the account's owner signing in from another."""
    platform.settings.logins_per_minute = 2
    await make_user(platform, "demo")
    for address in ("203.0.113.1", "203.0.113.2", "2001:db8:0:1::5"):
        for _ in range(2):
            with pytest.raises(InvalidCredentials):
                await auth.login(platform, username="demo", password="a guess", client=address)
        with pytest.raises(RateLimited, match="this account from your address"):  # even the right password
            await auth.login(platform, username="demo", password="long enough pw", client=address)
    with pytest.raises(RateLimited):  # another address of the same /64 is the same client
        await auth.login(platform, username="demo", password="long enough pw", client="2001:db8:0:1::6")
    user, token = await auth.login(platform, username="demo", password="long enough pw", client="198.51.100.7")
    assert user.username == "demo" and token


async def test_per_address_limits_count_an_ipv6_client_by_its_64(platform):
    platform.settings.logins_per_minute_per_client = 2
    platform.settings.registrations_per_hour_per_client = 1
    for i, address in enumerate(("2001:db8:1:2::a", "2001:db8:1:2:ffff::1")):  # one /64: one client
        with pytest.raises(InvalidCredentials):
            await auth.login(platform, username=f"nobody{i}", password="a guess", client=address)
    with pytest.raises(RateLimited, match="from your address"):
        await auth.login(platform, username="nobody9", password="a guess", client="2001:db8:1:2::b")
    with pytest.raises(InvalidCredentials):  # the next /64 is another client
        await auth.login(platform, username="nobody9", password="a guess", client="2001:db8:1:3::b")
    await auth.register(platform, username="first1", email="f@example.org", password="long enough pw", client="::1")
    with pytest.raises(RateLimited, match="registrations from your address"):
        await auth.register(
            platform, username="second2", email="s@example.org", password="long enough pw", client="::2"
        )


def test_client_keys():
    assert client_key("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1" and client_key("192.0.2.1") == "192.0.2.1"
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("testclient") == "testclient" and client_key(None) == client_key("") == "-"


async def test_request_bodies_are_limited(client, platform):
    limit = platform.settings.max_body_bytes
    padding = "x" * (limit + 10)
    response = await client.post("/graphql", json={"query": "{ __typename }", "variables": {"pad": padding}})
    assert response.status_code == 413 and response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

    async def chunks():  # no Content-Length: counted while read
        for _ in range(limit // 65536 + 2):
            yield b" " * 65536

    chunked = await client.post("/graphql", content=chunks(), headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    assert (await client.post("/graphql", json={"query": "{ __typename }"})).status_code == 200


async def test_field_lengths(gql, platform):
    token, _ = await register_user(gql, "long1")
    answer = (await gql(CREATE, {"f": {"text": "x" * 101, "label": "bad"}}, token=token))["createExample"]
    assert answer["__typename"] == "InvalidInput" and answer["fieldErrors"] == [
        {"field": ["text"], "rule": "max_length"}
    ]
    assert await _examples(platform) == 0


async def test_page_sizes(gql, platform):
    token, _ = await register_user(gql, "pager1")
    too_many = platform.settings.page_max_size + 1
    body = await gql(
        f'{{ examples(taskCode: "toy", first: {too_many}) {{ edges {{ cursor }} }} }}', token=token, expect_errors=True
    )
    assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT"


async def test_depth_aliases_and_tokens(platform, monkeypatch):
    monkeypatch.setattr(platform.settings, "graphql_max_depth", 2)  # the schema's rules are built with the app
    app = create_app(platform=platform, sync_tasks=False, run_jobs=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        gql = GraphQLClient(http)
        assert "errors" not in await gql("{ tasks { code } }", token=None, expect_errors=True)
        too_deep = "{ tasks { currentRound { targetModels { name } } } }"
        aliases = "{ " + " ".join(f"a{i}: tasks {{ code }}" for i in range(20)) + " }"
        many_tokens = "{ " + " ".join("tasks { code name labels }" for _ in range(400)) + " }"
        for query, words in (
            (too_deep, "exceeds maximum operation depth"),
            (aliases, "aliases"),
            (many_tokens, "token"),
        ):
            body = await gql(query, token=None, expect_errors=True)
            assert words in body["errors"][0]["message"].lower(), body
            assert body.get("data") is None


async def test_operations_are_limited_by_the_objects_they_can_ask_for(platform, monkeypatch):
    """Page sizes multiply down each path: short documents that ask for many objects are refused before anything
    runs, with the count and the limit."""
    monkeypatch.setattr(platform.settings, "graphql_max_nodes", 1000)
    app = create_app(platform=platform, sync_tasks=False, run_jobs=False)
    nested = """query($n: Int) { models(taskCode: "toy", first: $n) { nodes {
      evaluations(first: 50) { nodes { id } } } } }"""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        gql = GraphQLClient(http)
        fine = await gql(nested, {"n": 10}, token=None, expect_errors=True)  # 10 + 10 x 50 = 510
        assert "errors" not in fine, fine
        body = await gql(nested, {"n": 30}, token=None, expect_errors=True)  # 30 + 30 x 50 = 1530
        error = body["errors"][0]
        assert body.get("data") is None and error["extensions"]["code"] == "QUERY_TOO_COSTLY"
        assert error["extensions"]["cost"] == 1530 and "smaller pages" in error["message"]
        # A connection asked for without a page size counts as its largest page (100), through fragments too.
        spread = """{ ...f } fragment f on Query { models(taskCode: "toy") { nodes {
          evaluations { nodes { id } } } } }"""
        refused = await gql(spread, token=None, expect_errors=True)
        assert refused["errors"][0]["extensions"]["cost"] == 100 + 100 * 100


def test_the_cost_of_an_operation_is_its_page_sizes_multiplied_down_each_path():
    from graphql import parse

    from dynaforge.api.cost import LIST_SIZES, PRICES, operation_cost
    from dynaforge.api.schema import build_schema

    schema = build_schema()._schema
    document = parse(
        """query { a: examples(taskCode: "t", first: 5) { nodes { id round { leaderboard(first: 7) { nodes {
        rank } } } } } tasks { code } b: datasetItems(id: "x", last: 3) { nodes { id } } }"""
    )
    [operation] = document.definitions
    # 5 examples, each with its round (1) and that round's leaderboard (its price and a page of 7); tasks, a plain
    # list, counts its declared maximum (tests/test_query_cost.py has the rest of the rules).
    leaderboard = PRICES["Round.leaderboard"] + 7
    assert operation_cost(schema, operation, {}) == 5 + 5 * (1 + leaderboard) + LIST_SIZES["Query.tasks"] + 3


@pytest.mark.parametrize("environment", ["production", "development"])
async def test_introspection_and_graphiql_follow_the_environment(environment, platform):
    from dynaforge.settings import Settings

    settings = Settings(
        database_url=platform.settings.database_url,
        load_plugins="",
        environment=environment,
        **({"secret_key": "s" * 40} if environment == "production" else {}),
    )
    p = platform
    original = p.settings
    p.settings = settings
    try:
        app = create_app(settings, platform=p, sync_tasks=False, run_jobs=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            gql = GraphQLClient(http)
            body = await gql("{ __schema { queryType { name } } }", token=None, expect_errors=True)
            page = await http.get("/graphql", headers={"accept": "text/html"})
    finally:
        p.settings = original
    if environment == "production":
        assert "introspection" in body["errors"][0]["message"].lower()
        assert page.status_code != 200 or "graphiql" not in page.text.lower()
    else:
        assert body["data"]["__schema"]["queryType"]["name"] == "Query"
        assert "graphiql" in page.text.lower()


async def test_unstorable_text_is_refused_everywhere(gql, platform):
    """NUL, unpaired surrogates and NaN never reach a store: in variables and query strings (INVALID_INPUT before any
    resolver), in task fields (however they arrive: imports and files too) and in request bodies (400)."""
    import json

    from dynaforge.tasks.fields import Role, TextField

    token, _ = await register_user(gql, "hygiene1")
    for text in ("a\x00b", "a\ud800b"):  # sent as JSON escapes (\u0000, \ud800), as a client's encoder would
        content = json.dumps({"query": CREATE, "variables": {"f": {"text": text, "label": "bad"}}}).encode()
        response = await gql.http.post(
            "/graphql",
            content=content,
            headers={"content-type": "application/json", "Authorization": f"Bearer {token}"},
        )
        body = response.json()
        assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT" and "$f" in body["errors"][0]["message"]
    literal = await gql(
        'mutation { createApiToken(input: {name: "x\\u0000y"}) { __typename } }', token=token, expect_errors=True
    )
    assert literal["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    assert await _examples(platform) == 0
    field = TextField(name="text", role=Role.INPUT)
    assert field.check("fine", task=None, values={}) == []
    assert [e.rule for e in field.check("nul\x00", task=None, values={})] == ["text"]


async def test_deep_bodies_are_refused_saying_why(client):
    deep = "[" * 100_000 + "]" * 100_000  # past the interpreter's recursion limit
    nested = '{"query": "{ __typename }", "variables": {"x": ' + "[" * 70 + "]" * 70 + "}}"  # past the body's limit
    for body in (deep, nested):
        response = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and "deeper than 64 levels" in response.text, response.text[:200]
    fine = '{"query": "{ __typename }", "variables": {"x": ' + "[" * 20 + "]" * 20 + "}}"
    assert (
        await client.post("/graphql", content=fine, headers={"content-type": "application/json"})
    ).status_code == 200
    assert (await client.get("/graphql", params={"query": "{ __typename }"})).status_code == 200


async def test_get_query_strings_are_bounded_like_bodies():
    from dynaforge.app import BodyLimit

    async def inner(scope, receive, send):
        raise AssertionError("a query string over the limit reached the app")

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/graphql", "headers": [], "query_string": b"q=" + b"x" * 200}
    await BodyLimit(inner, 100)(scope, receive, send)
    assert sent[0]["status"] == 414 and b"URI_TOO_LONG" in sent[1]["body"]


async def test_registrations_are_limited_per_client_before_any_hashing(gql, platform):
    platform.settings.registrations_per_hour_per_client = 2
    register = """mutation($u: String!) { register(input: {username: $u, email: "x@example.org",
      password: "long enough password"}) { __typename ... on Error { message } } }"""
    answers = []
    for i in range(3):
        variables = {"u": f"signup{i}"}
        answers.append((await gql(register.replace("x@", f"{i}@"), variables, token=None))["register"])
    assert [a["__typename"] for a in answers] == ["AuthPayload", "AuthPayload", "RateLimited"]
    assert "registrations from your address" in answers[2]["message"]


async def test_the_rate_limiter_holds_bounded_keys():
    """Keys come from what callers send (a username at login): long ones are kept as digests, and the number kept in
    memory is capped, least recently used first out. (tests/test_limits_redis.py: the same on Redis.)"""
    from dynaforge.services.ratelimit import MAX_KEY_LENGTH, RateLimiter

    limiter = RateLimiter(max_keys=3)
    assert not limiter.shared
    for i in range(60):
        await limiter.hit(f"login:{i}" + "u" * 900_000, 10, 60.0, "login attempts")
    assert len(limiter) == 3
    assert all(len(key) <= MAX_KEY_LENGTH + 50 for key in limiter.memory.held_keys())  # + the limit's own prefix
    await limiter.hit("login:a", 1, 60.0, "login attempts")
    with pytest.raises(RateLimited) as refused:  # the window of a key in use is kept
        await limiter.hit("login:a", 1, 60.0, "login attempts")
    assert 59 <= refused.value.retry_after_s <= 60 and "at most 1 per 60s" in refused.value.message
    huge = "login:" + "v" * 900_000
    await limiter.hit(huge, 1, 60.0, "login attempts")
    with pytest.raises(RateLimited):  # a digest counts like the key it stands for
        await limiter.hit(huge, 1, 60.0, "login attempts")


async def test_a_window_frees_its_slots_as_it_moves():
    from dynaforge.services.ratelimit import RateLimiter

    now = [1000.0]
    limiter = RateLimiter(clock=lambda: now[0])
    await limiter.hit("k", 2, 60.0, "calls")
    now[0] += 30
    await limiter.hit("k", 2, 60.0, "calls")
    with pytest.raises(RateLimited) as refused:
        await limiter.hit("k", 2, 60.0, "calls")
    assert refused.value.retry_after_s == pytest.approx(30.0)
    now[0] += 30.5  # the first hit left the window
    await limiter.hit("k", 2, 60.0, "calls")
    await limiter.hit("other", 0, 60.0, "calls")  # 0: no limit


async def test_bodies_that_are_not_json_objects_get_400_saying_why(client):
    for body, words in (
        (b"\x80", "not UTF-8"),
        (b"null", "JSON object"),
        (b"42", "JSON object"),
        (b'{"query": "{ __typename }", "variables": {"x": NaN}}', "not JSON"),
    ):
        response = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and words in response.text, (body, response.text)


@pytest.mark.parametrize("key", ["+1", " 1", "1_0", "\u0661", "0", "-3", str(2**31), str(2**63)])
def test_ids_hold_plain_positive_integers_in_range(key):
    from dynaforge.api.node import global_id, parse_id
    from dynaforge.errors import InvalidInput

    with pytest.raises(InvalidInput, match="is not the id of an Example"):
        parse_id(global_id("Example", key), "id", "Example")
    assert parse_id(global_id("Example", 17), "id", "Example") == 17


@pytest.mark.parametrize(
    "value",
    [
        "17",  # a bare row id: ids are opaque and global now
        "RXhhbXBsZToxNw==",  # the right bytes with padding: one spelling per id
        "RXhhbXBsZToxNw ",
        "TW9kZWw6MTc",  # a Model's id where an Example's is expected
        "Tm9wZToxNw",  # a type the server does not have
        "é" * 3,
        "",
        "A" * 500,
    ],
)
def test_only_this_servers_ids_of_the_expected_type_are_taken(value):
    from dynaforge.api.node import parse_id
    from dynaforge.errors import InvalidInput

    with pytest.raises(InvalidInput, match="is not the id of an Example") as raised:
        parse_id(value, "exampleId", "Example")
    assert raised.value.field_errors[0].field == "exampleId"


def test_forwarded_headers_are_believed_only_from_named_proxies(monkeypatch):
    """Per-address limits count the client's address: X-Forwarded-For may name it only when the operator names the
    proxy that sets it (uvicorn would otherwise believe anyone on loopback)."""
    import uvicorn

    import dynaforge.app
    from dynaforge.cli import _serve
    from dynaforge.settings import Settings

    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    monkeypatch.setattr(dynaforge.app, "create_app", lambda *args, **kwargs: object())
    _serve(Settings(environment="test"), "127.0.0.1", 8000, warm_models=False)
    _serve(Settings(environment="test", forwarded_allow_ips="10.0.0.5"), "127.0.0.1", 8000, warm_models=False)
    assert (calls[0]["proxy_headers"], calls[0]["forwarded_allow_ips"]) == (False, None)
    assert (calls[1]["proxy_headers"], calls[1]["forwarded_allow_ips"]) == (True, "10.0.0.5")
