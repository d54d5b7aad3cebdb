"""Sessions: signing in names the token it issued, a user sees which of their tokens is the one in use, and logout
revokes exactly that one."""

from __future__ import annotations

SIGN_IN = """
mutation($u: String!, $p: String!) {
  login(input: {username: $u, password: $p}) {
    __typename ... on AuthPayload { token apiToken { id name prefix revoked current } } ... on Error { message }
  }
}"""
REGISTER = """
mutation($u: String!, $e: String!, $p: String!) {
  register(input: {username: $u, email: $e, password: $p}) {
    __typename ... on AuthPayload { token user { username } apiToken { id name prefix } }
  }
}"""
TOKENS = "{ me { apiTokens { nodes { id name revoked current } } } }"
LOGOUT = "mutation { logout { __typename ... on LoggedOut { apiToken { id revoked } } ... on Error { message } } }"
PASSWORD = "correct horse battery"


async def test_sign_in_names_its_token_and_logout_revokes_only_that_one(gql):
    registered = (await gql(REGISTER, {"u": "sam", "e": "sam@example.org", "p": PASSWORD}, token=None))["register"]
    first = registered["token"]
    assert registered["apiToken"]["name"] == "registration" and first.startswith(registered["apiToken"]["prefix"])
    second = (await gql(SIGN_IN, {"u": "sam", "p": PASSWORD}, token=None))["login"]
    assert second["__typename"] == "AuthPayload"
    assert second["apiToken"]["name"] == "login" and second["apiToken"]["revoked"] is False
    assert second["apiToken"]["current"] is False  # the login request itself was not signed with it

    seen = (await gql(TOKENS, token=second["token"]))["me"]["apiTokens"]["nodes"]
    assert {t["id"]: t["current"] for t in seen} == {
        registered["apiToken"]["id"]: False,
        second["apiToken"]["id"]: True,
    }

    out = (await gql(LOGOUT, token=second["token"]))["logout"]
    assert out == {"__typename": "LoggedOut", "apiToken": {"id": second["apiToken"]["id"], "revoked": True}}
    assert (await gql(TOKENS, token=second["token"]))["me"] is None  # that session is over at once
    still = (await gql(TOKENS, token=first))["me"]["apiTokens"]["nodes"]  # the other one goes on
    assert {t["id"]: (t["revoked"], t["current"]) for t in still} == {
        registered["apiToken"]["id"]: (False, True),
        second["apiToken"]["id"]: (True, False),
    }


async def test_logout_needs_a_valid_token(gql):
    anonymous = (await gql(LOGOUT, token=None))["logout"]
    assert anonymous["__typename"] == "NotAuthenticated"
    token = (await gql(REGISTER, {"u": "tess", "e": "tess@example.org", "p": PASSWORD}, token=None))["register"][
        "token"
    ]
    assert (await gql(LOGOUT, token=token))["logout"]["__typename"] == "LoggedOut"
    again = (await gql(LOGOUT, token=token))["logout"]  # the revoked token no longer signs anyone in
    assert again["__typename"] == "NotAuthenticated" and "revoked" in again["message"]


async def test_tokens_expire(gql, platform):
    from datetime import timedelta

    from sqlalchemy import update

    from dynaforge.db.models import ApiToken, utcnow

    platform.settings.token_ttl_days = 30
    registered = (await gql(REGISTER, {"u": "tess", "e": "tess@example.org", "p": PASSWORD}, token=None))["register"]
    token = registered["token"]
    [listed] = (await gql("{ me { apiTokens { nodes { expiresAt } } } }", token=token))["me"]["apiTokens"]["nodes"]
    assert listed["expiresAt"] is not None  # about 30 days ahead
    async with platform.db.write() as s:
        await s.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(minutes=1)))
    platform.caches.tokens.clear()
    assert (await gql("{ me { username } }", token=token))["me"] is None
    refused = (
        await gql(
            'mutation { createApiToken(input: {name: "x"}) { __typename ... on Error { message } } }', token=token
        )
    )["createApiToken"]
    assert refused["__typename"] == "NotAuthenticated" and "expired" in refused["message"]
    platform.settings.token_ttl_days = 0  # never: what an operator may choose
    again = (await gql(SIGN_IN, {"u": "tess", "p": PASSWORD}, token=None))["login"]["token"]
    [never] = [
        t
        for t in (await gql("{ me { apiTokens { nodes { expiresAt revoked } } } }", token=again))["me"]["apiTokens"][
            "nodes"
        ]
        if not t["revoked"] and t["expiresAt"] is None
    ]
    assert never == {"expiresAt": None, "revoked": False}


async def test_a_user_holds_a_bounded_number_of_live_tokens(gql, platform):
    platform.settings.tokens_per_user = 3
    await gql(REGISTER, {"u": "lena", "e": "lena@example.org", "p": PASSWORD}, token=None)
    tokens = [(await gql(SIGN_IN, {"u": "lena", "p": PASSWORD}, token=None))["login"]["token"] for _ in range(4)]
    listed = (await gql(TOKENS, token=tokens[-1]))["me"]["apiTokens"]["nodes"]
    assert len(listed) == 5 and sum(not t["revoked"] for t in listed) == 3
    assert [t["revoked"] for t in listed] == [False, False, False, True, True]  # newest first: the oldest went


async def test_revoke_all_signs_out_everywhere(gql):
    await gql(REGISTER, {"u": "otto", "e": "otto@example.org", "p": PASSWORD}, token=None)
    one = (await gql(SIGN_IN, {"u": "otto", "p": PASSWORD}, token=None))["login"]["token"]
    two = (await gql(SIGN_IN, {"u": "otto", "p": PASSWORD}, token=None))["login"]["token"]
    out = await gql("mutation { revokeAllApiTokens { __typename ... on AllApiTokensRevoked { count } } }", token=one)
    assert out["revokeAllApiTokens"] == {"__typename": "AllApiTokensRevoked", "count": 3}
    for token in (one, two):
        assert (await gql("{ me { username } }", token=token, expect_errors=True))["data"]["me"] is None
