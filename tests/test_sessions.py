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
TOKENS = "{ me { apiTokens { id name revoked current } } }"
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

    seen = (await gql(TOKENS, token=second["token"]))["me"]["apiTokens"]
    assert {t["id"]: t["current"] for t in seen} == {
        registered["apiToken"]["id"]: False,
        second["apiToken"]["id"]: True,
    }

    out = (await gql(LOGOUT, token=second["token"]))["logout"]
    assert out == {"__typename": "LoggedOut", "apiToken": {"id": second["apiToken"]["id"], "revoked": True}}
    assert (await gql(TOKENS, token=second["token"]))["me"] is None  # that session is over at once
    still = (await gql(TOKENS, token=first))["me"]["apiTokens"]  # the other one goes on
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
