"""The outbound policy (dynaforge.outbound): every spelling of an internal address is refused in every environment
unless allowlisted, the checked address is the one connected to, and the http backend goes through it."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from support import make_user, serve_in_thread

from dynaforge.defaults.backends.http import HttpBackend, HttpPredictor
from dynaforge.errors import InvalidInput
from dynaforge.inference.backends import InferenceError
from dynaforge.outbound import OutboundPolicy, OutboundRefused
from dynaforge.services import submissions, webhooks

CLOSED = OutboundPolicy("")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/admin",
        "http://127.1/",  # short form
        "http://2130706433/",  # decimal
        "http://0x7f000001/",  # hexadecimal
        "http://017700000001/",  # octal
        "http://0.0.0.0:8080/",
        "http://localhost:5432/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
        "http://[::ffff:7f00:1]/",
        "http://[2002:7f00:1::]/",  # 6to4 carrying 127.0.0.1
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata (link-local)
        "http://[fe80::1]/",
        "http://10.0.0.7:8080/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://[fc00::1]/",  # unique local
        "http://224.0.0.1/",  # multicast
        "http://240.0.0.1/",  # reserved
    ],
)
def test_internal_addresses_are_refused_in_every_spelling(url):
    with pytest.raises(OutboundRefused) as caught:
        CLOSED.resolve(url)
    assert caught.value.rule == "internal"
    assert "DYNAFORGE_OUTBOUND_ALLOW" in caught.value.message


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("ftp://example.org/model", "format"),
        ("file:///etc/passwd", "format"),
        ("gopher://127.0.0.1:6379/_INFO", "format"),
        ("//example.org/x", "format"),
        ("http://", "format"),
        ("http://example.org:99999/", "format"),
        ("http://" + "a" * 2001 + ".org/", "format"),
        (42, "format"),
        ("http://user:secret@example.org/", "credentials"),
        ("http://no-such-host.invalid/", "dns"),
    ],
)
def test_urls_that_no_request_may_go_to(url, rule):
    with pytest.raises(OutboundRefused) as caught:
        CLOSED.resolve(url)
    assert caught.value.rule == rule


def test_public_addresses_are_pinned_as_given():
    target = CLOSED.resolve("http://93.184.215.14:8080/predict?x=1")
    assert target.pinned_url == "http://93.184.215.14:8080/predict?x=1" and target.host_header == "93.184.215.14:8080"
    v6 = CLOSED.resolve("https://[2001:4860:4860::8888]/v1")
    assert v6.pinned_url == "https://[2001:4860:4860::8888]/v1" and v6.sni_hostname is None


def test_an_operators_allowlist_admits_networks_addresses_and_names():
    policy = OutboundPolicy("10.0.0.0/8, 127.0.0.1 ,localhost,fd00::/8")
    assert policy.resolve("http://10.1.2.3/").address == "10.1.2.3"
    assert policy.resolve("http://127.0.0.1:9/").address == "127.0.0.1"
    assert policy.resolve("http://[fd00::5]/").address == "fd00::5"
    assert policy.resolve("http://[::ffff:10.0.0.9]/").address == "::ffff:a00:9"  # a mapped allowlisted address
    named = policy.resolve("http://LOCALHOST:7000/m")
    assert named.address in {"127.0.0.1", "::1"} and named.host_header == "LOCALHOST:7000"
    for url in ("http://127.0.0.2/", "http://192.168.0.1/", "http://169.254.169.254/"):
        with pytest.raises(OutboundRefused):
            policy.resolve(url)


def test_a_name_is_connected_to_at_the_address_that_was_checked():
    """No second lookup at connection time (DNS rebinding): the request goes to the pinned address and carries the
    name in its Host header."""
    seen: list[str] = []

    async def health(request: Request) -> JSONResponse:
        seen.append(request.headers["host"])
        return JSONResponse({"status": "ok"})

    with serve_in_thread(Starlette(routes=[Route("/health", health)])) as url:
        port = url.rsplit(":", 1)[1]
        predictor = HttpPredictor({"url": f"http://localhost:{port}"}, OutboundPolicy("127.0.0.1,::1"))
        try:
            assert predictor.target.pinned_url == f"http://127.0.0.1:{port}"
            predictor.check_health()
        finally:
            predictor.close()
    assert seen == [f"localhost:{port}"]


def test_the_http_backend_refuses_internal_model_servers_without_naming_them():
    with pytest.raises(InferenceError) as caught:
        HttpPredictor({"url": "http://169.254.169.254/latest"}, CLOSED)
    assert "outbound policy refuses the model server's url" in str(caught.value)
    assert "169.254" not in str(caught.value)


def test_the_http_backend_reads_the_policy_of_its_process(monkeypatch):
    monkeypatch.setenv("DYNAFORGE_OUTBOUND_ALLOW", "")
    with pytest.raises(InferenceError, match="internal address"):
        HttpBackend().load({"url": "http://127.0.0.1:9"})


def test_a_host_that_does_not_resolve_reads_like_an_internal_one():
    """Annotators see a target's load error: it must not tell which internal names exist."""
    errors = []
    for url in ("http://no-such-host.invalid/", "http://10.0.0.7:8080/"):
        with pytest.raises(InferenceError) as caught:
            HttpPredictor({"url": url}, CLOSED)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "10.0.0.7" not in errors[1]


async def test_refusals_name_what_a_host_resolves_to_only_to_admins(platform):
    """`localhost` resolves to loopback: a non-admin is told the URL is refused, not what the name resolves to (a
    map of the server's network); an admin gets the address."""
    platform.settings.outbound_allow = ""  # what a server has unless its operator allowlists hosts
    builder, admin = await make_user(platform, "builder1"), await make_user(platform, "admin1", admin=True)
    url = "http://localhost:8080"
    for actor, detailed in ((builder, False), (admin, True)):
        with pytest.raises(InvalidInput) as submitted:
            await submissions.submit_model(
                platform, actor, task_code="toy", name="probe", backend="http", config={"url": url}
            )
        with pytest.raises(InvalidInput) as hooked:
            await webhooks.create(platform, actor, "toy", f"{url}/hook", ["exampleCreated"])
        for refused in (submitted.value, hooked.value):
            [error] = refused.field_errors
            assert error.rule == "internal" and "DYNAFORGE_OUTBOUND_ALLOW" in error.message
            named = "127.0.0.1" in error.message or "::1" in error.message
            assert (named, "'localhost'" in error.message) == (detailed, detailed), error.message
