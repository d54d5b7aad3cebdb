"""The Prolific crowd platform (https://www.prolific.com), registered by the core.

A study's URL on Prolific is the study's link with Prolific's three placeholders, which Prolific fills in for each
participant (one line)::

    https://<web app>/crowd/prolific/<study id>
        ?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}

At the end the participant is sent to ``https://app.prolific.com/submissions/complete?cc=<completion code>``.

Bonuses: the bonus file is Prolific's bulk-bonus CSV (``participant id,amount`` in the study's currency, two
decimals). Paying through the API takes the operator's token in ``DYNAFORGE_PROLIFIC_API_TOKEN`` (a Prolific API
token of the workspace that runs the studies) and ``DYNAFORGE_PROLIFIC_API_URL`` (default
``https://api.prolific.com``): Prolific sets a bulk bonus up (``POST /api/v1/submissions/bonus-payments/``) and pays it
(``POST /api/v1/bulk-bonus-payments/{id}/pay/``). The second request is not idempotent on Prolific's side, so it is
sent once, never retried: when its outcome is unknown the payment is recorded as uncertain and counted as paid.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from dynaforge.crowd import Arrival, Bonus, CrowdPlatform, PayoutFailed
from dynaforge.hookspecs import hookimpl
from dynaforge.outbound import OutboundPolicy, OutboundRefused

API_TOKEN_VARIABLE = "DYNAFORGE_PROLIFIC_API_TOKEN"
API_URL_VARIABLE = "DYNAFORGE_PROLIFIC_API_URL"
DEFAULT_API_URL = "https://api.prolific.com"
COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
TIMEOUT_S = 20.0
_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")


class Prolific(CrowdPlatform):
    name = "prolific"
    title = "Prolific"
    parameters = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    pays = True

    def arrival(self, parameters: Mapping[str, str]) -> Arrival:
        values = {}
        for key in self.parameters:
            value = str(parameters.get(key, "")).strip()
            if not value:
                raise ValueError(
                    f"the link has no {key}: open the study from Prolific, whose link fills it in "
                    "(owners: end the study URL with "
                    "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}})"
                )
            if not _ID.match(value):
                raise ValueError(f"{key} is not a Prolific id (letters and digits): open the study from Prolific")
            values[key] = value
        return Arrival(participant=values["PROLIFIC_PID"], session=values["SESSION_ID"], study=values["STUDY_ID"])

    def link_path(self, study: str) -> str:
        return (
            f"/crowd/{self.name}/{study}"
            "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
        )

    def completion_url(self, code: str) -> str | None:
        return COMPLETION_URL.format(code=code)

    async def pay(self, study: str, bonuses: list[Bonus], currency: str, policy: OutboundPolicy) -> str:
        import httpx  # noqa: PLC0415  (only when an owner pays)

        token = os.environ.get(API_TOKEN_VARIABLE, "").strip()
        if not token:
            raise PayoutFailed(
                f"the server has no Prolific API token: its operator sets {API_TOKEN_VARIABLE}; until then download "
                "the bonus file and upload it on Prolific"
            )
        base = os.environ.get(API_URL_VARIABLE, "").strip() or DEFAULT_API_URL
        csv = self.bonus_file(study, bonuses, currency)
        if not csv:
            raise PayoutFailed("nobody is owed a bonus")
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

        async def post(client: httpx.AsyncClient, path: str, body: dict | None) -> httpx.Response:
            try:
                target = await policy.resolve_async(base.rstrip("/") + path)
            except OutboundRefused as exc:
                raise PayoutFailed(f"the Prolific API URL {exc.message}") from exc
            return await client.post(
                target.pinned_url, json=body, headers={**headers, **target.headers()}, extensions=target.extensions()
            )

        async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False, trust_env=False) as client:
            try:
                created = await post(
                    client, "/api/v1/submissions/bonus-payments/", {"study_id": study, "csv_bonuses": csv}
                )
            except httpx.HTTPError as exc:  # nothing is paid before the second request
                raise PayoutFailed(f"Prolific could not be reached ({type(exc).__name__}); nothing was paid") from exc
            if created.status_code >= 300:
                raise PayoutFailed(
                    f"Prolific refused the bonuses (HTTP {created.status_code}): {_detail(created)}; nothing was paid"
                )
            try:
                reference = str(created.json()["id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise PayoutFailed("Prolific's answer had no bulk bonus id; nothing was paid") from exc
            try:
                paid = await post(client, f"/api/v1/bulk-bonus-payments/{reference}/pay/", None)
            except httpx.HTTPError as exc:
                raise PayoutFailed(
                    f"Prolific did not confirm bulk bonus {reference} ({type(exc).__name__}): check it on Prolific "
                    "before paying again; it counts as paid meanwhile",
                    uncertain=True,
                    reference=reference,
                ) from exc
            if paid.status_code >= 500:  # it may have paid before it failed
                raise PayoutFailed(
                    f"Prolific failed while paying bulk bonus {reference} (HTTP {paid.status_code}): check it on "
                    "Prolific before paying again; it counts as paid meanwhile",
                    uncertain=True,
                    reference=reference,
                )
            if paid.status_code >= 300:
                raise PayoutFailed(
                    f"Prolific refused to pay bulk bonus {reference} (HTTP {paid.status_code}): {_detail(paid)}"
                )
        return reference


def _detail(response: object) -> str:
    """What Prolific said, short (its error bodies are JSON with ``error.detail`` or a message)."""
    try:
        body = response.json()  # type: ignore[attr-defined]
    except ValueError:
        return "no details"
    error = body.get("error", body) if isinstance(body, dict) else body
    detail = error.get("detail", error) if isinstance(error, dict) else error
    return str(detail)[:300]


@hookimpl
def register_crowd_platforms(register: Callable[[CrowdPlatform], None]) -> None:
    register(Prolific())
