"""The ``llm`` adversary: a chat model behind an OpenAI-compatible HTTP endpoint writes candidates.

The model gets the task's instructions, the fields a candidate must fill (with their roles and, for choice fields,
the allowed values), the context, the annotator's draft when there is one (it is asked for minimal edits of it) and
a few examples that fooled the task's targets before (the asker's own or published ones, never their gold fields:
what the prompt holds can come back in a candidate); it answers with a JSON object of candidates, each with the gold
it claims and a rationale. Every candidate the task's own validation accepts is put to the target in one batched
oracle query, so the verdicts come from the round's model, never from the LLM's opinion of itself.

It is off until the operator sets ``DYNAFORGE_LLM_ADVERSARY_URL`` (the base URL of an OpenAI-compatible API, e.g.
``https://api.example.org/v1``; the request goes to ``{url}/chat/completions``). Like every request the server makes,
it goes through the outbound policy (:mod:`dynaforge.outbound`): an internal address is refused unless the operator
allowlists it in ``DYNAFORGE_OUTBOUND_ALLOW``, the connection goes to the address that was checked, and redirects are
never followed. The API key (``DYNAFORGE_LLM_ADVERSARY_API_KEY``) is sent as a bearer token and never logged.

Failures (a refused URL, an HTTP error, a timeout, an answer that is not the JSON asked for) raise
:class:`AdversaryFailed` whose message says what went wrong and what to change, by status, size and rule only: never
the endpoint's address or what it answered, since the message reaches annotators.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import re
import time
from typing import TYPE_CHECKING, Any, ClassVar

from dynaforge.adversaries.base import Adversary, AdversaryFailed, AttackRequest, AttackStopped, Candidate, Oracle
from dynaforge.errors import InvalidInput
from dynaforge.outbound import OutboundPolicy, OutboundRefused
from dynaforge.tasks.fields import ChoiceField, Field, Role, TextField

if TYPE_CHECKING:
    from dynaforge.tasks.base import Task

log = logging.getLogger(__name__)

#: Why the adversary is unavailable when the operator has not configured an endpoint.
OFF = "off: set DYNAFORGE_LLM_ADVERSARY_URL to an OpenAI-compatible endpoint"
#: The most candidates one request asks the model for, whatever the caller wants (a longer answer is slower).
MAX_ASKED = 10
#: How many examples that fooled the target before go into the prompt, and the longest one (as JSON) that does.
MAX_FOOLED_BEFORE = 5
MAX_EXAMPLE_CHARS = 4000
#: A rationale is cut to this many characters: it is shown beside a suggestion, not read as an essay.
MAX_RATIONALE_CHARS = 300
#: The largest answer read from the endpoint; a longer one is refused rather than held in memory.
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
#: More word edits than this and a candidate's edits are summarised as a rewrite of the field.
MAX_EDITS = 8
TEMPERATURE = 0.7

_REFUSALS = {
    "format": "it must be an absolute http or https URL such as https://api.example.org/v1; fix "
    "DYNAFORGE_LLM_ADVERSARY_URL",
    "credentials": "it must not carry a user name or password; remove them from DYNAFORGE_LLM_ADVERSARY_URL and set "
    "DYNAFORGE_LLM_ADVERSARY_API_KEY instead",
    "dns": "its host does not resolve; fix DYNAFORGE_LLM_ADVERSARY_URL",
    "internal": "it points at a loopback, private, link-local or otherwise internal address, which the server calls "
    "only when its operator adds the host or network to DYNAFORGE_OUTBOUND_ALLOW",
}
_STATUS_HINTS = {
    401: "check DYNAFORGE_LLM_ADVERSARY_API_KEY",
    403: "check DYNAFORGE_LLM_ADVERSARY_API_KEY and the model's access",
    404: "check DYNAFORGE_LLM_ADVERSARY_URL (the base of the API, e.g. https://host/v1) and "
    "DYNAFORGE_LLM_ADVERSARY_MODEL",
    429: "the endpoint is rate limiting; try again later",
}
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_ROLE_WORDS = {
    Role.CONTEXT: "context (what the example is about)",
    Role.INPUT: "input (the target model sees it)",
    Role.TARGET: "target (the gold answer you claim; the target model must not see it)",
    Role.METADATA: "metadata (notes the target model does not see)",
}


def _written_fields(task: Task, context: dict[str, Any]) -> list[Field]:
    """The fields a candidate fills: its input, target and metadata fields, and the context fields too when the
    request has no context (the candidate then carries its own, as an annotator's example without a stored one)."""
    roles = [Role.INPUT, Role.TARGET, Role.METADATA]
    if not context:
        roles.insert(0, Role.CONTEXT)
    return task.fields_with(*roles)


def _describe_field(task: Task, f: Field) -> str:
    """One line for the prompt: name, role, whether required, the values it takes, and its description."""
    if isinstance(f, ChoiceField):
        values = "exactly one of: " + ", ".join(json.dumps(o) for o in f.options(task))
    elif isinstance(f, TextField):
        values = f"a string of {f.min_length} to {f.max_length} characters"
    else:
        values = "a JSON value matching " + json.dumps(f.value_schema(task), sort_keys=True)
    line = f"- {f.name}: {_ROLE_WORDS[f.role]}, {'required' if f.required else 'optional'}; {values}"
    return line + (f". {f.description}" if f.description else "")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def build_messages(request: AttackRequest, limit: int) -> list[dict[str, str]]:
    """The chat messages for one request: a system message (the job, the task's instructions, the fields to fill and
    the answer's format, asking for at most ``limit`` candidates) and a user message (the context, the draft to edit
    minimally when there is one, and up to five examples that fooled the target before, without their gold fields).

    Pure (no I/O, no randomness), so tests and operators can see exactly what the model is told. The task's own text
    (its instructions and fields) goes into the system message; what people wrote (the context, the draft, earlier
    examples) only into the user message, as JSON.
    """
    task = request.task
    fields = _written_fields(task, request.context)
    names = [f.name for f in fields]
    system = [
        f'You write examples for the task "{task.name}" ({task.code}). Each example must make a target model give a '
        "wrong answer while a careful person reading it agrees with the gold answer you claim. Examples must be "
        "natural, correct and unambiguous: a trick that makes the gold answer wrong or debatable is useless.",
    ]
    if task.description:
        system.append(f"About the task: {task.description}")
    if task.instructions:
        system.append(f"The instructions annotators follow:\n{task.instructions}")
    system.append(
        "An example's fields (write every required one, and no others):\n"
        + "\n".join(_describe_field(task, f) for f in fields)
    )
    shape = {"candidates": [{"fields": {name: "..." for name in names}, "rationale": "..."}]}
    system.append(
        f"Answer with one JSON object and nothing else, of the form {_dumps(shape)}, with at most {limit} "
        f'candidate{"s" if limit != 1 else ""}, each a different example. "rationale" says in one or two short '
        "sentences why the target model is likely to be wrong and why the gold you claim is right."
    )

    user: list[str] = []
    if request.context:
        user.append(f"The context (the same for every example):\n{_dumps(request.context)}")
    if request.draft is not None:
        user.append(
            f"An annotator's draft, with the gold they claim:\n{_dumps(request.draft)}\nPropose minimal edits of this "
            "draft: change a few words so that the target model is fooled, keep it fluent, and claim the gold a "
            "careful person would give the edited example. Do not return the draft unchanged."
        )
    fooled = []
    shown_names = {f.name for f in task.fields} - task.gold_field_names()  # a gold field may come back in a candidate
    for example in request.fooled_before:
        shown = {k: v for k, v in example.items() if k in shown_names}
        text = _dumps(shown)
        if shown and len(text) <= MAX_EXAMPLE_CHARS:
            fooled.append(text)
        if len(fooled) == MAX_FOOLED_BEFORE:
            break
    if fooled:
        user.append(
            "Examples that fooled the target model before, without their gold answers (learn what worked; do not "
            "copy them):\n" + "\n".join(fooled)
        )
    if request.draft is None:
        user.append(f"Write up to {limit} new example{'s' if limit != 1 else ''}.")
    else:
        user.append(f"Write up to {limit} edited version{'s' if limit != 1 else ''} of the draft.")
    return [
        {"role": "system", "content": "\n\n".join(system)},
        {"role": "user", "content": "\n\n".join(user)},
    ]


def parse_candidates(content: str, *, truncated: bool = False) -> list[Any]:
    """The ``candidates`` list of the model's answer ``content``: a JSON object, possibly wrapped in a ``` fence
    (many models add one despite ``response_format``). Raises :class:`AdversaryFailed` for anything else.
    ``truncated``: the endpoint said it cut the answer at its token limit (said in the error, as the likely cause)."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:  # an object among prose ("Here you are: {...}")
            try:
                data = json.loads(text[start : end + 1])
            except ValueError:
                data = None
        if data is None:
            cause = " (it was cut off at the model's token limit)" if truncated else ""
            raise AdversaryFailed(
                f"the LLM's answer ({len(content)} characters) is not a JSON object{cause}; use a model that "
                "follows JSON instructions (DYNAFORGE_LLM_ADVERSARY_MODEL)"
            ) from None
    if isinstance(data, list):  # a bare list of candidates is what was meant
        data = {"candidates": data}
    if not isinstance(data, dict) or not isinstance(data.get("candidates"), list):
        raise AdversaryFailed(
            'the LLM\'s answer is JSON but not an object with a "candidates" list; use a model that follows JSON '
            "instructions (DYNAFORGE_LLM_ADVERSARY_MODEL)"
        )
    return data["candidates"]


def _rationale(value: Any) -> str:
    text = " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""
    if len(text) > MAX_RATIONALE_CHARS:
        text = text[: MAX_RATIONALE_CHARS - 1].rstrip() + "…"
    return text or "proposed by the llm adversary"


def _word_edits(name: str, before: str, after: str) -> list[str]:
    old, new = before.split(), after.split()
    edits = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op != "equal":
            edits.append(f"{name}: {' '.join(old[i1:i2])!r} -> {' '.join(new[j1:j2])!r}")
    if not edits and before != after:  # only spacing changed
        edits.append(f"{name}: {before!r} -> {after!r}")
    return edits if len(edits) <= MAX_EDITS else [f"{name}: rewritten"]


def edits_between(draft: dict[str, Any] | None, fields: dict[str, Any]) -> tuple[str, ...]:
    """What changed from ``draft`` to ``fields``: word-level edits of text, ``name: old -> new`` of other values
    (``()`` without a draft)."""
    if draft is None:
        return ()
    out: list[str] = []
    for name in sorted(set(draft) | set(fields)):
        before, after = draft.get(name), fields.get(name)
        if before == after:
            continue
        if isinstance(before, str) and isinstance(after, str):
            out.extend(_word_edits(name, before, after))
        else:
            out.append(f"{name}: {before!r} -> {after!r}")
    return tuple(out)


class LLMAdversary(Adversary):
    """See the module docstring. Stateless: each attack makes one request with the settings it is given."""

    name: ClassVar[str] = "llm"
    description: ClassVar[str] = (
        "A chat model behind an OpenAI-compatible endpoint writes examples from the task's instructions, the context, "
        "the draft and examples that fooled the target before (off until DYNAFORGE_LLM_ADVERSARY_URL is set)."
    )
    needs_draft: ClassVar[bool] = False
    assists: ClassVar[bool] = True
    generates: ClassVar[bool] = True

    def unsuitable(self, task: Task, settings: Any = None) -> str | None:
        if settings is None or not getattr(settings, "llm_adversary_url", None):
            return OFF
        return super().unsuitable(task, settings)

    async def attack(self, request: AttackRequest, oracle: Oracle) -> list[Candidate]:
        settings = request.settings
        if settings is None or not getattr(settings, "llm_adversary_url", None):
            raise AdversaryFailed(OFF)
        try:
            limit = min(MAX_ASKED, max(1, 2 * request.max_candidates), oracle.remaining)
            if limit < 1:
                return []
            oracle.check()
            content, truncated = await self._complete(settings, request, limit, oracle)
            if content is None:
                return []  # the attack's time ran out while the model was writing
            candidates = self._candidates(request, parse_candidates(content, truncated=truncated))
            asked = candidates[: oracle.remaining]
            if not asked:
                return []
            verdicts = await oracle.query([c.fields for c in asked])
        except AttackStopped:
            return []
        return [
            Candidate(fields=c.fields, rationale=c.rationale, edits=c.edits, verdict=v)
            for c, v in zip(asked, verdicts, strict=True)
        ]

    # ------------------------------------------------------------------ the request
    async def _complete(
        self, settings: Any, request: AttackRequest, limit: int, oracle: Oracle
    ) -> tuple[str | None, bool]:
        """POST the chat completion; returns the answer's content and whether it was cut at the token limit, or
        (None, False) when the attack's own deadline, not the endpoint's timeout, ended the wait."""
        import httpx

        url = str(settings.llm_adversary_url).rstrip("/") + "/chat/completions"
        try:
            target = await OutboundPolicy(settings.outbound_allow).resolve_async(url)
        except OutboundRefused as exc:
            # Not exc.message: it names the host, and this error can reach annotators.
            raise AdversaryFailed(
                f"the server's outbound policy refuses DYNAFORGE_LLM_ADVERSARY_URL ({exc.rule}): {_REFUSALS[exc.rule]}"
            ) from None
        body = {
            "model": settings.llm_adversary_model,
            "messages": build_messages(request, limit),
            "temperature": TEMPERATURE,
            "seed": request.rng.randrange(2**31),
            "response_format": {"type": "json_object"},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": "Dynaforge-LLM-Adversary/1",
            **target.headers(),
        }
        if settings.llm_adversary_api_key:
            headers["authorization"] = f"Bearer {settings.llm_adversary_api_key}"
        timeout_s = float(settings.llm_adversary_timeout_s)
        left_s = oracle.deadline - time.monotonic()
        by_deadline = left_s < timeout_s
        wait_s = max(0.001, min(timeout_s, left_s))
        started = time.perf_counter()
        try:
            async with asyncio.timeout(wait_s):
                async with (
                    httpx.AsyncClient(timeout=wait_s, follow_redirects=False, trust_env=False) as client,
                    client.stream(
                        "POST", target.pinned_url, json=body, headers=headers, extensions=target.extensions()
                    ) as response,
                ):
                    status = response.status_code
                    raw = bytearray()
                    async for chunk in response.aiter_bytes():
                        raw += chunk
                        if len(raw) > MAX_RESPONSE_BYTES:
                            raise AdversaryFailed(
                                f"the LLM endpoint answered more than {MAX_RESPONSE_BYTES // 1024} KiB; check "
                                "DYNAFORGE_LLM_ADVERSARY_URL"
                            )
        except (TimeoutError, httpx.TimeoutException):
            if by_deadline:
                return None, False
            raise AdversaryFailed(
                f"the LLM endpoint did not answer within {timeout_s:g} s; raise DYNAFORGE_LLM_ADVERSARY_TIMEOUT_S or "
                "use a faster model"
            ) from None
        except httpx.HTTPError as exc:
            raise AdversaryFailed(
                f"the request to the LLM endpoint failed ({type(exc).__name__}); check DYNAFORGE_LLM_ADVERSARY_URL and "
                "that the endpoint is up"
            ) from None
        elapsed_ms = (time.perf_counter() - started) * 1000
        size = f"a {len(raw)}-byte body" if raw else "an empty body"
        if not 200 <= status < 300:
            if 300 <= status < 400:
                hint = "redirects are not followed; set DYNAFORGE_LLM_ADVERSARY_URL to the final address"
            else:
                hint = _STATUS_HINTS.get(status, "check the endpoint and DYNAFORGE_LLM_ADVERSARY_URL")
            log.warning("llm adversary: the endpoint answered HTTP %s after %.0f ms", status, elapsed_ms)
            raise AdversaryFailed(f"the LLM endpoint answered HTTP {status} with {size}; {hint}")
        log.debug("llm adversary: the endpoint answered %s after %.0f ms", size, elapsed_ms)
        return _read_completion(bytes(raw), size)

    # ------------------------------------------------------------------ the answer
    def _candidates(self, request: AttackRequest, items: list[Any]) -> list[Candidate]:
        """The valid candidates among the model's ``items``, cleaned by the task's own validation, without repeats
        and without any whose input fields are the draft's (a different claimed gold on the same text is no edit)."""
        task = request.task
        context_names = set(task.field_names(Role.CONTEXT)) if request.context else set()
        input_names = task.field_names(Role.INPUT)
        draft_inputs = None
        if request.draft is not None:
            draft_inputs = _dumps({n: _stripped(request.draft.get(n)) for n in input_names})
        seen: set[str] = set()
        out: list[Candidate] = []
        dropped = 0
        for item in items:
            fields = item.get("fields") if isinstance(item, dict) else None
            if not isinstance(fields, dict):
                dropped += 1
                continue
            # The model may echo the context it was given; the request's own context is what counts.
            fields = {k: v for k, v in fields.items() if k not in context_names}
            try:
                cleaned = task.validate_example(fields, request.context or None)
            except InvalidInput:
                dropped += 1
                continue
            key = _dumps(cleaned)
            if key in seen or (
                draft_inputs is not None and _dumps({n: cleaned.get(n) for n in input_names}) == draft_inputs
            ):
                dropped += 1
                continue
            seen.add(key)
            out.append(
                Candidate(
                    fields=cleaned,
                    rationale=_rationale(item.get("rationale")),
                    edits=edits_between(request.draft, cleaned),
                )
            )
        if dropped:
            log.debug("llm adversary: dropped %d of %d candidates (invalid or repeated)", dropped, len(items))
        return out


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _read_completion(raw: bytes, size: str) -> tuple[str, bool]:
    """The first choice's message content of an OpenAI-style chat completion, and whether it was cut off."""
    try:
        data = json.loads(raw)
    except ValueError:
        raise AdversaryFailed(
            f"the LLM endpoint answered {size} that is not JSON; DYNAFORGE_LLM_ADVERSARY_URL must be an "
            "OpenAI-compatible API"
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        if isinstance(message, dict) and message.get("refusal"):
            raise AdversaryFailed("the LLM refused to write candidates for this request")
        raise AdversaryFailed(
            "the LLM endpoint's answer has no choices[0].message.content; DYNAFORGE_LLM_ADVERSARY_URL must be an "
            "OpenAI-compatible chat completions API"
        )
    return content, isinstance(choice, dict) and choice.get("finish_reason") == "length"
