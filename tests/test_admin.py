"""Running the platform (admins) and the allowances people see, through GraphQL on SQLite and PostgreSQL: the users
connection, making and unmaking admins, disabling accounts (their tokens stop at once), reading anyone's tokens,
a submitter's 24-hour allowance, and sending a webhook delivery again.
"""

from __future__ import annotations

from sqlalchemy import select
from support import gid, make_user

from dynaforge.db.models import User, WebhookDelivery, WebhookDeliveryStatus
from dynaforge.services import adversaries, auth, submissions, webhooks
from dynaforge.services.actor import Actor

USERS = """query($s: String, $a: Boolean! = false, $d: Boolean! = false, $f: Int, $after: String) {
  users(search: $s, adminsOnly: $a, disabledOnly: $d, first: $f, after: $after) {
    totalCount pageInfo { hasNextPage endCursor } nodes { id username isAdmin active email } } }"""
SET_ADMIN = """mutation($id: ID!, $on: Boolean!) { setUserAdmin(input: {id: $id, isAdmin: $on}) { __typename
  ... on UserUpdated { user { username isAdmin } } ... on Error { message } } }"""
SET_ACTIVE = """mutation($id: ID!, $on: Boolean!) { setUserActive(input: {id: $id, active: $on}) { __typename
  ... on UserUpdated { user { username active } } ... on Error { message } } }"""
ME = "query { me { username isAdmin } }"
MAKE_TOKEN = """mutation { createApiToken(input: {name: "more"}) { __typename ... on Error { message } } }"""


async def _token(p, actor: Actor) -> str:
    return (await auth.create_token(p, actor, name="admin-tests"))[1]


async def test_admins_list_and_search_the_accounts_a_page_at_a_time(gql, platform):
    admin = await make_user(platform, "root", admin=True)
    for name in ("ada", "adam", "bob"):
        await make_user(platform, name)
    await adversaries.machine_account(platform, "toy-templates")  # never listed
    token = await _token(platform, admin)
    everyone = (await gql(USERS, {"f": 2}, token=token))["users"]
    assert everyone["totalCount"] == 4 and everyone["pageInfo"]["hasNextPage"]
    assert [n["username"] for n in everyone["nodes"]] == ["bob", "adam"]  # newest first
    rest = (await gql(USERS, {"f": 5, "after": everyone["pageInfo"]["endCursor"]}, token=token))["users"]
    assert [n["username"] for n in rest["nodes"]] == ["ada", "root"]
    found = (await gql(USERS, {"s": "ADA"}, token=token))["users"]
    assert [n["username"] for n in found["nodes"]] == ["adam", "ada"]
    assert found["nodes"][0]["email"] == "adam@example.org" and found["nodes"][0]["active"] is True
    assert [n["username"] for n in (await gql(USERS, {"a": True}, token=token))["users"]["nodes"]] == ["root"]
    literal = (await gql(USERS, {"s": "a%"}, token=token))["users"]  # % and _ are letters, not wildcards
    assert literal["totalCount"] == 0
    refused = await gql(USERS, {"s": " "}, token=token, expect_errors=True)
    assert refused["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    plain = await gql(USERS, token=await _token(platform, await make_user(platform, "carol")), expect_errors=True)
    assert plain["data"]["users"] is None and plain["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_a_disabled_account_stops_signing_in_at_once_and_can_be_enabled_again(gql, platform):
    admin = await make_user(platform, "root", admin=True)
    dora = await make_user(platform, "dora")
    root_token, dora_token = await _token(platform, admin), await _token(platform, dora)
    assert (await gql(ME, token=dora_token))["me"]["username"] == "dora"  # cached as signed in
    off = (await gql(SET_ACTIVE, {"id": gid("User", dora.user_id), "on": False}, token=root_token))["setUserActive"]
    assert off == {"__typename": "UserUpdated", "user": {"username": "dora", "active": False}}
    assert (await gql(ME, token=dora_token))["me"] is None
    refused = (await gql(MAKE_TOKEN, token=dora_token))["createApiToken"]
    assert refused == {"__typename": "NotAuthenticated", "message": "This account is disabled"}
    disabled = (await gql(USERS, {"d": True}, token=root_token))["users"]["nodes"]
    assert [n["username"] for n in disabled] == ["dora"]
    on = (await gql(SET_ACTIVE, {"id": gid("User", dora.user_id), "on": True}, token=root_token))["setUserActive"]
    assert on["user"]["active"] is True
    assert (await gql(ME, token=dora_token))["me"]["username"] == "dora"
    yourself = await gql(SET_ACTIVE, {"id": gid("User", admin.user_id), "on": False}, token=root_token)
    assert yourself["setUserActive"]["__typename"] == "Conflict"
    assert "ask another admin" in yourself["setUserActive"]["message"]
    nobody = await gql(SET_ACTIVE, {"id": gid("User", 999_999), "on": False}, token=root_token)
    assert nobody["setUserActive"]["__typename"] == "NotFound"
    by_user = await gql(SET_ACTIVE, {"id": gid("User", admin.user_id), "on": False}, token=dora_token)
    assert by_user["setUserActive"]["__typename"] == "Forbidden"
    async with platform.db.session() as s:
        assert (await s.get(User, admin.user_id)).is_active


async def test_admins_are_made_and_unmade_and_the_change_holds_at_once(gql, platform):
    admin = await make_user(platform, "root", admin=True)
    eve = await make_user(platform, "eve")
    root_token, eve_token = await _token(platform, admin), await _token(platform, eve)
    assert (await gql(USERS, token=eve_token, expect_errors=True))["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    made = (await gql(SET_ADMIN, {"id": gid("User", eve.user_id), "on": True}, token=root_token))["setUserAdmin"]
    assert made == {"__typename": "UserUpdated", "user": {"username": "eve", "isAdmin": True}}
    assert (await gql(ME, token=eve_token))["me"] == {"username": "eve", "isAdmin": True}
    assert (await gql(USERS, token=eve_token))["users"]["totalCount"] == 2
    # the new admin unmakes the old one; nobody unmakes themself
    yourself = await gql(SET_ADMIN, {"id": gid("User", eve.user_id), "on": False}, token=eve_token)
    assert yourself["setUserAdmin"]["__typename"] == "Conflict"
    unmade = await gql(SET_ADMIN, {"id": gid("User", admin.user_id), "on": False}, token=eve_token)
    assert unmade["setUserAdmin"]["user"] == {"username": "root", "isAdmin": False}
    assert (await gql(USERS, token=root_token, expect_errors=True))["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_admins_read_anyones_tokens_without_secrets_and_state(gql, platform):
    admin = await make_user(platform, "root", admin=True)
    fay = await make_user(platform, "fay")
    gus = await make_user(platform, "gus")
    await _token(platform, fay)
    query = "query($id: ID!) { node(id: $id) { ... on User { active apiTokens { nodes { name revoked } } } } }"
    as_admin = (await gql(query, {"id": gid("User", fay.user_id)}, token=await _token(platform, admin)))["node"]
    assert as_admin == {"active": True, "apiTokens": {"nodes": [{"name": "admin-tests", "revoked": False}]}}
    as_other = (await gql(query, {"id": gid("User", fay.user_id)}, token=await _token(platform, gus)))["node"]
    assert as_other == {"active": None, "apiTokens": {"nodes": []}}


async def test_tokens_are_listed_a_page_at_a_time_newest_first(gql, platform):
    """``User.apiTokens`` is a connection: newest first unless ``orderBy`` says otherwise, counted whole, paged by
    cursor; someone else's (not an admin) is an empty page with a count of 0."""
    hal = await make_user(platform, "hal")
    names = ["first", "second", "third"]
    for name in names:
        await auth.create_token(platform, hal, name=name)
    token = await auth.create_token(platform, hal, name="fourth")
    query = """query($f: Int, $a: String, $o: CreationOrder! = NEWEST_FIRST) { me { apiTokens(first: $f, after: $a,
      orderBy: $o) { totalCount pageInfo { hasNextPage endCursor } nodes { name } } } }"""
    page = (await gql(query, {"f": 2}, token=token[1]))["me"]["apiTokens"]
    assert [n["name"] for n in page["nodes"]] == ["fourth", "third"]
    assert page["totalCount"] == 4 and page["pageInfo"]["hasNextPage"]
    rest = (await gql(query, {"f": 5, "a": page["pageInfo"]["endCursor"]}, token=token[1]))["me"]["apiTokens"]
    assert [n["name"] for n in rest["nodes"]] == ["second", "first"] and not rest["pageInfo"]["hasNextPage"]
    oldest = (await gql(query, {"o": "OLDEST_FIRST"}, token=token[1]))["me"]["apiTokens"]["nodes"]
    assert [n["name"] for n in oldest] == [*names, "fourth"]
    other = await make_user(platform, "ivy")
    theirs = "query($id: ID!) { node(id: $id) { ... on User { apiTokens { totalCount nodes { name } } } } }"
    seen = (await gql(theirs, {"id": gid("User", hal.user_id)}, token=await _token(platform, other)))["node"]
    assert seen == {"apiTokens": {"totalCount": 0, "nodes": []}}


async def test_a_submitter_sees_what_is_left_of_the_days_allowance(gql, platform):
    builder = await make_user(platform, "builder")
    token = await _token(platform, builder)
    query = 'query { task(code: "toy") { viewerSubmissions { limit used left nextAt } } }'
    before = (await gql(query, token=token))["task"]["viewerSubmissions"]
    limit = before["limit"]
    assert before == {"limit": limit, "used": 0, "left": limit, "nextAt": None}
    await submissions.submit_model(
        platform,
        builder,
        task_code="toy",
        name="first",
        backend="python",
        config={"callable": "toy_plugin:keyword_model"},
    )
    after = (await gql(query, token=token))["task"]["viewerSubmissions"]
    assert (after["used"], after["left"]) == (1, limit - 1) and after["nextAt"] is not None
    anonymous = await gql(query, token=None, expect_errors=True)
    assert anonymous["data"]["task"]["viewerSubmissions"] is None
    assert anonymous["errors"][0]["extensions"]["code"] == "NOT_AUTHENTICATED"


REDELIVER = """mutation($id: ID!) { redeliverWebhook(input: {id: $id}) { __typename
  ... on WebhookRedelivered { delivery { id status attempts error } } ... on Error { message } } }"""


async def test_a_failed_delivery_is_sent_again_under_its_own_message_id(gql, platform):
    author = await make_user(platform, "hooker")
    stranger = await make_user(platform, "stranger")
    made = await webhooks.create(platform, author, "toy", "https://hooks.example.org/in", ["modelFooled"])
    async with platform.db.write() as s:
        row = WebhookDelivery(
            webhook_id=made.webhook.id,
            message_id="msg_failed_once",
            event="modelFooled",
            body="{}",
            status=WebhookDeliveryStatus.FAILED,
            attempts=8,
            error="HTTP 500",
            response_status=500,
        )
        s.add(row)
    token = await _token(platform, author)
    delivery = gid("WebhookDelivery", "msg_failed_once")
    refused = await gql(REDELIVER, {"id": delivery}, token=await _token(platform, stranger))
    assert refused["redeliverWebhook"]["__typename"] == "NotFound"
    again = (await gql(REDELIVER, {"id": delivery}, token=token))["redeliverWebhook"]
    assert again == {
        "__typename": "WebhookRedelivered",
        "delivery": {"id": delivery, "status": "PENDING", "attempts": 0, "error": None},
    }
    twice = (await gql(REDELIVER, {"id": delivery}, token=token))["redeliverWebhook"]
    assert twice["__typename"] == "Conflict" and "still being sent" in twice["message"]
    async with platform.db.write() as s:
        stored = await s.scalar(select(WebhookDelivery).where(WebhookDelivery.message_id == "msg_failed_once"))
        stored.status = WebhookDeliveryStatus.FAILED
    await webhooks.change(platform, author, made.webhook.id, active=False)
    paused = (await gql(REDELIVER, {"id": delivery}, token=token))["redeliverWebhook"]
    assert paused["__typename"] == "Conflict" and "paused" in paused["message"]


async def test_each_token_says_how_it_was_issued(gql, platform):
    admin = await make_user(platform, "root", admin=True)
    user, registered = await auth.register(
        platform, username="hana", email="hana@example.org", password="long enough pw"
    )
    await auth.login(platform, username="hana", password="long enough pw")
    hana = Actor(user.id, user.username, False)
    await auth.create_token(platform, hana, name="my script")
    await auth.create_token(platform, admin, name="for hana", username="hana")
    await auth.create_token(platform, Actor.system(), name="operator's", username="hana")
    query = "query { me { apiTokens(orderBy: OLDEST_FIRST) { nodes { name origin } } } }"
    tokens = (await gql(query, token=registered))["me"]["apiTokens"]["nodes"]
    assert tokens == [
        {"name": "registration", "origin": "REGISTRATION"},
        {"name": "login", "origin": "LOGIN"},
        {"name": "my script", "origin": "API"},
        {"name": "for hana", "origin": "OPERATOR"},
        {"name": "operator's", "origin": "OPERATOR"},
    ]
