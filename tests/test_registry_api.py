"""What the server offers, as the forms of owners and model builders read it: backends with a configuration schema
that agrees with the backend's own checks, metrics, perturbations; and looking a user up by name."""

from __future__ import annotations

import jsonschema
import pytest
from support import make_user

from dynaforge.defaults.backends.http import HttpBackend
from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.defaults.backends.transformers import TransformersBackend
from dynaforge.services import auth

CASES = [
    (HttpBackend(), {"url": "http://10.0.0.5:8080", "timeout_s": 5, "retries": 2}, True),
    (HttpBackend(), {"url": "http://10.0.0.5:8080", "retries": 11}, False),
    (HttpBackend(), {"timeout_s": 5}, False),
    (HttpBackend(), {"url": "http://x", "surprise": 1}, False),
    (PythonBackend(), {"callable": "pkg.mod:fn"}, True),
    (PythonBackend(), {"factory": "pkg.mod:make", "kwargs": {"size": 3}}, True),
    (PythonBackend(), {"callable": "pkg.mod:fn", "factory": "pkg.mod:make"}, False),
    (PythonBackend(), {}, False),
    (TransformersBackend(), {"path": "/models/nli", "label_map": {"LABEL_0": "entailment"}}, True),
    (TransformersBackend(), {"path": "/models/nli", "text_fields": ["a", "b", "c"]}, False),
    (TransformersBackend(), {"path": ""}, False),
]


@pytest.mark.parametrize(("backend", "config", "valid"), CASES)
def test_each_backend_schema_agrees_with_its_checks(backend, config, valid):
    jsonschema.Draft202012Validator.check_schema(backend.config_schema)
    by_schema = jsonschema.Draft202012Validator(backend.config_schema).is_valid(config)
    by_checks = not backend.check_config(config)
    assert (by_schema, by_checks) == (valid, valid), (config, backend.check_config(config))


REGISTRY = """{ backends { name description configSchema openToSubmissions } metrics { name direction }
  perturbations { name kind description } }"""


async def test_the_registry_over_graphql(gql, platform):
    platform.settings.submission_backends = "http, transformers"
    answer = await gql(REGISTRY, token=None)
    backends = {b["name"]: b for b in answer["backends"]}
    assert {"http", "python", "transformers"} <= set(backends)
    assert backends["http"]["openToSubmissions"] and not backends["python"]["openToSubmissions"]
    assert backends["http"]["configSchema"]["required"] == ["url"]
    assert {m["name"]: m["direction"] for m in answer["metrics"]}["accuracy"] == "HIGHER"
    kinds = {p["kind"] for p in answer["perturbations"]}
    assert kinds <= {"ROBUSTNESS", "FAIRNESS"} and answer["perturbations"]


USER = "query($u: String!) { user(username: $u) { id username email } }"


async def test_users_are_looked_up_by_name_without_case(gql, platform):
    looked = await make_user(platform, "Lookup_Target")
    asker = await make_user(platform, "lookup_asker")
    token = (await auth.create_token(platform, asker, name="t"))[1]
    found = (await gql(USER, {"u": "lookup_target"}, token=token))["user"]
    assert found["username"] == "Lookup_Target" and found["email"] is None  # not theirs to read
    mine = (await gql(USER, {"u": "LOOKUP_ASKER"}, token=token))["user"]
    assert mine["email"] is not None
    assert (await gql(USER, {"u": "nobody_here"}, token=token))["user"] is None
    assert (await gql(USER, {"u": "lookup_target"}, token=None))["user"] is None  # anonymous: null
    assert looked.user_id
