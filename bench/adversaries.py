"""ADV: how well do the machine adversaries fool each task's default target? (informational)

For each task (sentiment, nli, qa, hatespeech; ``BENCH_ADV_TASKS`` picks some) and each built-in adversary
(``perturbation-search``, ``embedding-swap``, the task plugin's own ``<task>-templates``, ``llm``), in this process,
without a server or a database:

* **The target**: the task's ``default_target_models[0]``, loaded through the plugin registry's backend
  (``registry.backends[spec.backend].load(spec.config)``, as ``LocalInferenceClient`` does) with the shipped weights
  (the model store is pointed at an empty folder while loading, so a model trained on this machine is not picked
  up), on one inference thread whose torch thread count is the run's (``--threads`` / ``BENCH_THREADS``, default
  the cores less one). Each attack gets an :class:`~dynaforge.adversaries.base.Oracle` built as
  ``services.adversaries.target_oracle`` builds one, without a Platform: ``predict`` runs the loaded predictor on the
  batch and reads each output with ``tasks.outputs.read_output``; ``judge`` is ``tasks.outputs.judge`` with
  the rule ``majority`` (one model: the rule does not matter). Budget: ``BENCH_ADV_BUDGET`` target queries per item
  (default 48, the platform's ``generation_queries_per_item``) and ``BENCH_ADV_ITEM_S`` seconds (default 30; the
  platform allows 60). The request is the platform's: the task's registered perturbations, ``max_candidates`` 2
  (``CANDIDATES_PER_ITEM`` of a generation run), no earlier fooling examples, the settings read from the
  environment.
* **The items** (``BENCH_ADV_ITEMS`` per task, default 40; seeded by ``BENCH_ADV_SEED``): rows of the shared data
  (``../shared/data``, or ``BENCH_DATA``) that the shipped target was not trained on where that can be told: SST-2
  dev for sentiment; the held-out premise-grouped fifth of ANLI r1 dev for nli, the held-out fifth of the SQuAD
  paragraphs for qa and the held-out fifth of the Davidson tweets (class 0 hateful, 1 and 2 not_hateful,
  normalised as the model normalises them) for hatespeech, each found with the plugin's own training split at the
  shipped seed 0 (the whole file, said in the task's note, when the plugin's split cannot be imported). Rows the
  task refuses (``validate_example``: too short, too long) are dropped and counted. Drafts are drawn in turn from
  each label (from each paragraph for qa), so both classes of hatespeech are attacked; a draft the target already
  gets wrong is skipped (``skip``) and the next of its label is drawn, so every task attacks the same number of
  drafts the target got right. A draft is the row's input and gold fields, with its context (premise, passage) as
  the request's context.
* **From the context alone** (rows ``... (no draft)``): the adversaries that need no draft (the templates, llm)
  are also run once per attacked item without its draft: from its premise (nli) or passage (qa), from the task's
  own demo prompts in turn (sentiment: SST-2 has no prompt), from nothing (hatespeech, which has no context).
  These rows are reported apart, not folded into the draft rows.

Figures per task and adversary (one line each; ``-`` where nothing was found):

* ``success``: the share of attacked items where the attack returned at least one candidate that fooled the target
  (and differs from the draft) within the budget;
* ``q/succ``: target queries spent over all items (the adversary's own query of the draft included, as on the
  platform) per success; ``s/succ``: the attacks' wall time (inference included, the checks below not) per
  success. On 2 shared cores the seconds move with the machine's load: compare them within a run;
* ``cands``: fooling candidates checked: up to 2 per item, those a generation run would store;
* ``gold kept``: the share of those candidates that a fresh validation by the shipped task checks accepts,
  ``task.validate_example(candidate.fields, context or None)`` (label in the task's set, lengths, a qa answer
  span that still sits at its offset in the passage, and the plugin's own rules: hatespeech's ``type`` agreeing
  with the label), and, for ``perturbation-search`` and ``embedding-swap``, whose claimed gold is the draft's by
  construction, that the claimed gold equals the draft's. **Limits**: this is a consistency check of what the
  candidate claims, not of whether the claim is true. A template's ``not good`` -> negative, a swapped word or a
  typo on the word that decides the label all pass it; only people validating tell. It fails only where the
  adversary emits a malformed or self-contradictory example, so 100% is the expected value;
* ``surface`` (the edit adversaries): a label-preservation proxy that does not trust the adversary's account of
  its edits: the share of candidates whose input text differs from the draft's only in case, punctuation,
  whitespace, the contractions of ``defaults.perturbations.CONTRACTIONS`` and single-word typos (one insertion,
  deletion, substitution or swap of adjacent letters in a word) that do not turn the word into another word of the
  MiniLM vocabulary ("form" -> "from" changes what is said). Such edits leave the meaning, so the gold holds; a
  word replaced by another word fails it (``embedding-swap`` fails it by design: its swaps are meant to be
  synonyms, which no string check can confirm);
* ``sim>=.8``: the share of candidates whose input text has a cosine similarity of at least 0.8 with the draft's
  in the MiniLM sentence encoder (mean-pooled, normalised), for the candidates that claim the draft's gold (for the
  templates, those that keep it; the others claim another gold on purpose). **Limits**: every target here sits on
  that same frozen encoder, so it is independent of the adversary's claim but not of the target; typos move
  MiniLM's sentence vectors a lot (word pieces change) while a reader still reads the word, so it undercounts
  typo edits, and a synonym that is in fact an antonym or a changed fact can sit above 0.8.

Also printed per task: a note (data, drafts drawn, skipped and refused, target and weights), for the templates
how many rewrites each rule offered and how many fooled the target, and which perturbations the fooling
``perturbation-search`` candidates used. ``llm`` is off unless ``DYNAFORGE_LLM_ADVERSARY_URL`` is set (the
platform's setting): its line then says it was not measured and why. Every line ends in INFO: no target, never a
failed run; without the shared data it prints why and measures nothing.

``python -m bench.adversaries`` runs it alone (no server); ``python -m bench ADV`` runs it after starting the
benchmark server like every benchmark of ``python -m bench`` (ADV does not use it). About 6 minutes with the
defaults on 2 shared cores (qa's passages cost the most); ``BENCH_ADV_ITEMS=10`` for a quick look.
"""

from __future__ import annotations

import asyncio
import csv
import difflib
import os
import random
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Context, Result, cpu_model, default_threads

ID = "ADV"
INFORMATIONAL = True
NEEDS_SERVER = False  # it runs the targets in its own process
TIMEOUT_S = 3600.0
DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parent.parent.parent / "shared" / "data"))
TASKS = ("sentiment", "nli", "qa", "hatespeech")
EDIT_ADVERSARIES = ("perturbation-search", "embedding-swap")
SIMILARITY_FLOOR = 0.8
TARGET = "informational"
NLI_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
SHIPPED_SEED = 0  # the seed the shipped weights were trained with (their metadata.json): their held-out split
CHECK_BATCH = 8  # drafts of one label the target is asked about at once while drawing


def _settings_int(name: str, default: int) -> int:
    return int(os.environ.get(name, "") or default)


# ---------------------------------------------------------------------------------------------- data


@dataclass
class Item:
    context: dict[str, Any]
    draft: dict[str, Any]
    stratum: str  # the label (the paragraph for qa): drafts are drawn from each in turn


@dataclass
class Rows:
    items: list[Item]
    source: str  # what the rows are, for the task's note


def _sentiment_rows() -> Rows:
    with open(DATA / "sentiment" / "sst2_dev.tsv", encoding="utf-8") as fh:
        lines = fh.read().splitlines()[1:]
    items = []
    for line in lines:
        text, _, label = line.rpartition("\t")
        if label.strip() in ("0", "1"):
            gold = "positive" if label.strip() == "1" else "negative"
            items.append(Item({}, {"statement": text.strip(), "label": gold}, gold))
    return Rows(items, "SST-2 dev (the shipped head was fitted on SST-2 train)")


def _nli_rows() -> Rows:
    path = DATA / "nli" / "anli_r1_dev_annotated.csv"
    try:
        from dynaforge_nli.train import HOLDOUT_FOLDS, LABELS, group_folds, read_rows

        rows = read_rows(path)
        folds = group_folds([r[2] for r in rows], [r[0] for r in rows], HOLDOUT_FOLDS, SHIPPED_SEED)
        held = [(p, h, LABELS[y]) for (p, h, y), f in zip(rows, folds, strict=True) if f == 0]
        source = "ANLI r1 dev, the premise-grouped fifth the shipped head held out"
    except ImportError as exc:
        with open(path, encoding="utf-8", newline="") as fh:
            held = [
                (r["context"].strip(), r["statement"].strip(), NLI_LABELS[r["gold_label"].strip().lower()])
                for r in csv.DictReader(fh)
            ]
        source = f"ANLI r1 dev, all rows (the plugin's split is not importable: {exc}; the head saw most of them)"
    return Rows([Item({"premise": p}, {"hypothesis": h, "label": y}, y) for p, h, y in held], source)


def _qa_rows() -> Rows:
    from dynaforge_qa.train import read_squad, split_paragraphs

    paragraphs, _ = read_squad(DATA / "qa" / "squad_v2_dev_sample.json")
    _, _, held = split_paragraphs(paragraphs, SHIPPED_SEED)
    items = [
        Item(
            {"passage": p.context},
            {"question": q.question.strip(), "answer": {"text": q.answers[0][0], "start": q.answers[0][1]}},
            p.key,
        )
        for p in held
        for q in p.questions
    ]
    return Rows(
        items, f"SQuAD 2.0 sample, answerable questions of the {len(held)} paragraphs the shipped head held out"
    )


def _hatespeech_rows() -> Rows:
    from dynaforge_hatespeech.model import normalise

    path = DATA / "hatespeech" / "davidson_2017.csv"
    try:
        from dynaforge_hatespeech.train import HOLDOUT_FRACTION, read_tweets, stratified_holdout

        texts, labels = read_tweets(path)
        texts = [normalise(t) for t in texts]
        train, held = stratified_holdout(labels, HOLDOUT_FRACTION, random.Random(SHIPPED_SEED))
        seen = {texts[i] for i in train}
        rows = [(texts[i], labels[i]) for i in held if texts[i] not in seen]
        source = "Davidson et al. 2017, the stratified fifth the shipped head held out"
    except ImportError as exc:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = [(normalise(r["tweet"] or ""), int(r["class"].strip() == "0")) for r in csv.DictReader(fh)]
        source = f"Davidson et al. 2017, all rows (the plugin's split is not importable: {exc})"
    items = []
    for text, hateful in rows:
        gold = "hateful" if hateful else "not_hateful"
        items.append(Item({}, {"statement": text, "label": gold}, gold))
    return Rows(items, source + "; class 0 hateful, 1 and 2 not_hateful")


ROWS: dict[str, Callable[[], Rows]] = {
    "sentiment": _sentiment_rows,
    "nli": _nli_rows,
    "qa": _qa_rows,
    "hatespeech": _hatespeech_rows,
}


# ---------------------------------------------------------------------------------------------- the target


@contextmanager
def _empty_model_store():
    """Point the model store at an empty folder while loading, so the loaders fall back to the shipped weights."""
    old = os.environ.get("DYNAFORGE_DATA_DIR")
    with tempfile.TemporaryDirectory(prefix="bench-adv-") as tmp:
        os.environ["DYNAFORGE_DATA_DIR"] = tmp
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("DYNAFORGE_DATA_DIR", None)
            else:
                os.environ["DYNAFORGE_DATA_DIR"] = old


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


class Target:
    """The task's default target model on one inference thread, and oracles on it built as ``target_oracle``
    builds them (its ``predict``/``judge`` pair) without a Platform."""

    def __init__(self, task: Any, registry: Any, threads: int):
        from dynaforge.tasks.base import ModelSpec

        self.task = task
        self.spec = ModelSpec.from_dict(task.default_target_models[0].as_dict())
        self.backend = registry.backends.get(self.spec.backend)
        if self.backend is None:
            raise RuntimeError(f"no installed plugin registers the backend {self.spec.backend!r}")
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="bench-adv", initializer=_set_threads, initargs=(threads,))
        self.model: Any = None
        self.calls = 0

    async def load(self) -> str:
        def load() -> Any:
            with _empty_model_store():
                return self.backend.load(self.spec.config)

        self.model = await asyncio.get_running_loop().run_in_executor(self.pool, load)
        weights = (getattr(self.model, "metadata", None) or {}).get("weights") or {}
        return f"{self.spec.name} ({weights.get('source', 'unknown')} weights)"

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def predict(self, inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        from dynaforge.inference.backends import InferenceError
        from dynaforge.tasks.outputs import read_output

        started = time.perf_counter()
        outputs = await self.run(self.model.predict, inputs)
        latency = (time.perf_counter() - started) * 1000
        self.calls += 1
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise InferenceError(f"model {self.spec.name!r} returned {type(outputs).__name__}, not one per input")
        members = []
        for model_input, output in zip(inputs, outputs, strict=True):
            try:
                prediction = read_output(self.task, output, model_input)
            except (ValueError, TypeError) as exc:
                raise InferenceError(f"model {self.spec.name!r} gave an unusable output: {exc}") from exc
            members.append([{"model": self.spec.name, "prediction": prediction, "latency_ms": round(latency, 3)}])
        return members

    def judge(self, members: list[dict[str, Any]], example: dict[str, Any], ctx: dict[str, Any]):
        from dynaforge.tasks import outputs

        return outputs.judge(self.task, "majority", members, example, ctx)

    def oracle(self, context: dict[str, Any], max_queries: int, time_limit_s: float) -> Any:
        from dynaforge.adversaries.base import Oracle

        return Oracle(self.task, context, self.predict, self.judge, max_queries=max_queries, time_limit_s=time_limit_s)

    async def fooled(self, items: list[Item]) -> list[bool]:
        """Whether the target gets each draft wrong, as the write path judges it (one batch)."""
        inputs = [self.task.build_model_input(i.context, i.draft) for i in items]
        members = await self.predict(inputs)
        return [self.judge(m, i.draft, i.context)[1] for m, i in zip(members, items, strict=True)]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


async def _draw(task: Any, target: Target, rows: Rows, n: int, seed: int) -> tuple[list[Item], int, int]:
    """``n`` drafts the target gets right, drawn from each stratum in turn (seeded); returns them, how many drawn
    drafts the target got wrong (skipped) and how many rows the task refused."""
    from dynaforge.errors import InvalidInput

    rng = random.Random(f"{seed}/{task.code}/draw")
    queues: dict[str, list[Item]] = {}
    for item in rows.items:
        queues.setdefault(item.stratum, []).append(item)
    strata = sorted(queues)
    rng.shuffle(strata)
    for s in strata:
        rng.shuffle(queues[s])
    checked: dict[str, list[tuple[Item, bool]]] = {s: [] for s in strata}
    kept: list[Item] = []
    skipped = refused = 0

    async def next_of(s: str) -> tuple[Item, bool] | None:
        nonlocal refused
        while not checked[s]:
            if not queues[s]:
                return None
            batch = []
            while queues[s] and len(batch) < CHECK_BATCH:
                item = queues[s].pop()
                try:
                    cleaned = task.validate_example(item.draft, item.context or None)
                except InvalidInput:
                    refused += 1
                    continue
                batch.append(Item(item.context, cleaned, s))
            if batch:
                checked[s] += list(zip(batch, await target.fooled(batch), strict=True))
        return checked[s].pop(0)

    active = list(strata)
    while len(kept) < n and active:
        for s in list(active):
            if len(kept) >= n:
                break
            while True:  # this stratum's next draft the target gets right
                got = await next_of(s)
                if got is None:
                    active.remove(s)
                    break
                item, wrong = got
                if wrong:
                    skipped += 1
                    continue
                kept.append(item)
                break
    return kept, skipped, refused


# ---------------------------------------------------------------------------------------------- checks


def _contraction_map() -> dict[str, str]:
    from dynaforge.defaults.perturbations import CONTRACTIONS

    return {contracted.lower(): expanded.lower() for expanded, contracted, _ in CONTRACTIONS}


_CONTRACTED: dict[str, str] = {}
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def _words(text: str) -> list[str]:
    """The text's words in a canonical form: case folded, typographic apostrophes plain, contractions expanded,
    punctuation dropped."""
    if not _CONTRACTED:
        _CONTRACTED.update(_contraction_map())
    out: list[str] = []
    for token in _TOKEN.findall(text.replace("\u2019", "'").casefold()):
        out += _CONTRACTED.get(token, token).split()
    return out


def _one_edit(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter inserted, deleted, substituted, or two adjacent letters swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def surface_only(draft: str, candidate: str, vocabulary: frozenset[str] | set[str] | dict[str, int]) -> bool:
    """Whether ``candidate`` differs from ``draft`` only by case, punctuation, whitespace, the project's
    contractions, and single-edit typos within words that do not make another vocabulary word (see the module's
    docstring). Independent of how the adversary describes its edits."""
    a, b = _words(draft), _words(candidate)
    if a == b or "".join(a) == "".join(b):
        return True
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        old, new = a[i1:i2], b[j1:j2]
        if "".join(old) == "".join(new):  # words run together or split: spacing only
            continue
        if (
            op == "replace"
            and len(old) == len(new)
            and all(x == y or (_one_edit(x, y) and y not in vocabulary) for x, y in zip(old, new, strict=True))
        ):
            continue
        if _one_edit("".join(old), "".join(new)) and not any(w in vocabulary for w in new if w not in old):
            continue  # a typo across a removed gap
        return False
    return True


def _input_text(task: Any, fields: dict[str, Any]) -> str:
    from dynaforge.adversaries.base import text_input_fields

    return "\n".join(str(fields.get(name, "")) for name in text_input_fields(task))


# ---------------------------------------------------------------------------------------------- one row


@dataclass
class Row:
    """What one task x adversary (x mode) row of the table adds up."""

    adversary: str
    mode: str  # "draft" or "no draft"
    items: int = 0
    successes: int = 0
    queries: int = 0
    seconds: float = 0.0
    candidates: int = 0
    valid: int = 0
    surface: int = 0
    surface_asked: int = 0
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (draft text, candidate text) for sim >= .8
    similar: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    offered: Counter[str] = field(default_factory=Counter)  # templates: rewrites asked about, by rule
    fooled_by: Counter[str] = field(default_factory=Counter)  # templates: fooling ones, by rule
    edit_kinds: Counter[str] = field(default_factory=Counter)  # perturbation-search: perturbations used
    not_measured: str | None = None

    def line(self, task_code: str, skipped: str) -> str:
        label = f"{task_code:<10} {self.adversary + (' (no draft)' if self.mode != 'draft' else ''):<32}"
        if self.not_measured:
            return f"{label} not measured: {self.not_measured}"

        def pct(k: int, n: int) -> str:
            return f"{100.0 * k / n:6.1f}%" if n else f"{'-':>7}"

        q = f"{self.queries / self.successes:7.1f}" if self.successes else f"{'-':>7}"
        s = f"{self.seconds / self.successes:7.2f}" if self.successes else f"{'-':>7}"
        n_sim = len(self.pairs)
        text = (
            f"{label} {self.items:>5} {skipped:>5} {pct(self.successes, self.items)} {q} {s} {self.candidates:>5} "
            f"{pct(self.valid, self.candidates):>9} {pct(self.surface, self.surface_asked)} {pct(self.similar, n_sim)}"
        )
        extras = []
        if n_sim and n_sim != self.candidates:
            extras.append(f"sim over {n_sim} that keep the draft's gold")
        if self.errors:
            extras.append("errors: " + ", ".join(f"{k} x{v}" for k, v in self.errors.most_common(3)))
        return text + (f"  ({'; '.join(extras)})" if extras else "")


HEADER = (
    f"{'task':<10} {'adversary':<32} {'items':>5} {'skip':>5} {'success':>7} {'q/succ':>7} {'s/succ':>7} "
    f"{'cands':>5} {'gold kept':>9} {'surface':>7} {'sim>=.8':>7}"
)


async def _attack(
    row: Row,
    adversary: Any,
    task: Any,
    target: Target,
    context: dict[str, Any],
    draft: dict[str, Any] | None,
    rng: random.Random,
    perturbations: dict[str, Any],
    settings: Any,
    budget: int,
    item_s: float,
    vocabulary: Any,
) -> None:
    from dynaforge.adversaries.base import AdversaryFailed, AttackRequest, claimed_gold, fooling
    from dynaforge.errors import InvalidInput
    from dynaforge.services.adversaries import CANDIDATES_PER_ITEM

    oracle = target.oracle(context, budget, item_s)
    request = AttackRequest(
        task=task,
        context=dict(context),
        draft=dict(draft) if draft is not None else None,
        rng=rng,
        max_candidates=CANDIDATES_PER_ITEM,
        fooled_before=[],
        perturbations=perturbations,
        settings=settings,
    )
    started = time.perf_counter()
    try:
        candidates = await adversary.attack(request, oracle)
    except AdversaryFailed as exc:
        row.errors[f"AdversaryFailed: {str(exc)[:80]}"] += 1
        candidates = []
    except Exception as exc:  # the platform would fail the run; here the item counts as not fooled
        row.errors[type(exc).__name__] += 1
        candidates = []
    row.seconds += time.perf_counter() - started
    row.queries += oracle.queries
    row.items += 1
    for c in candidates:  # the templates return every rewrite asked about, fooling or not
        rule = c.rationale.split(":", 1)[0] if ":" in c.rationale else "?"
        row.offered[rule] += 1
        if c.fooled:
            row.fooled_by[rule] += 1
    found = [c for c in fooling(candidates, CANDIDATES_PER_ITEM) if draft is None or c.fields != draft]
    if found:
        row.successes += 1
    keeps_draft_gold = adversary.name in EDIT_ADVERSARIES
    for c in found:
        row.candidates += 1
        try:
            task.validate_example(dict(c.fields), context or None)
            valid = True
        except InvalidInput:
            valid = False
        same_gold = draft is not None and claimed_gold(task, c.fields) == claimed_gold(task, draft)
        if valid and (same_gold or not keeps_draft_gold):
            row.valid += 1
        if adversary.name == "perturbation-search":
            for edit in c.edits:
                kind = re.search(r"\((\w+)\)$", edit)
                row.edit_kinds[kind.group(1) if kind else "?"] += 1
        if draft is None or not same_gold:
            continue
        before, after = _input_text(task, draft), _input_text(task, c.fields)
        row.pairs.append((before, after))
        if keeps_draft_gold:
            row.surface_asked += 1
            row.surface += surface_only(before, after, vocabulary)


async def _similarity(target: Target, rows: list[Row]) -> None:
    """``sim>=.8`` of every row, in one pass of the MiniLM sentence encoder (on the inference thread)."""
    from dynaforge.inference.encoders import minilm_path, shared_encoder

    texts = sorted({t for row in rows for pair in row.pairs for t in pair})
    if not texts:
        return

    def embed() -> dict[str, Any]:
        vectors = shared_encoder(minilm_path()).embed_many(texts, max_length=128)
        return dict(zip(texts, vectors, strict=True))

    by_text = await target.run(embed)
    for row in rows:
        row.similar = sum(float(by_text[a] @ by_text[b]) >= SIMILARITY_FLOOR for a, b in row.pairs)


# ---------------------------------------------------------------------------------------------- one task


def _no_draft_contexts(task: Any, items: list[Item]) -> list[dict[str, Any]]:
    """Where the no-draft runs start: each attacked item's context (premise, passage), the task's demo prompts in
    turn when the data has no context (sentiment), nothing when the task has none (hatespeech)."""
    if any(i.context for i in items):
        return [dict(i.context) for i in items]
    demos = [dict(c) for c in getattr(task, "demo_contexts", ()) or ()]
    return [demos[k % len(demos)] if demos else {} for k in range(len(items))]


async def _task(task_code: str, n: int, budget: int, item_s: float, seed: int, threads: int) -> list[Result]:
    from dynaforge.adversaries.embedding import embedding_table
    from dynaforge.plugins import Plugins

    started = time.perf_counter()
    plugins = Plugins(allowlist={task_code})
    registry = plugins.registry
    task = registry.tasks.get(task_code)
    if task is None:
        why = plugins.errors.get(task_code, "the plugin is not installed")
        return [Result(ID, f"{task_code:<10} not measured: the task did not load ({why})", TARGET, True, info=True)]
    try:
        rows = ROWS[task_code]()
    except FileNotFoundError as exc:
        return [Result(ID, f"{task_code:<10} not measured: {exc}", TARGET, True, info=True)]
    settings = _settings()
    perturbations = {
        name: registry.perturbations[name] for name in task.perturbations if name in registry.perturbations
    }
    target = Target(task, registry, threads)
    try:
        loaded = await target.load()
        items, skipped, refused = await _draw(task, target, rows, n, seed)
        try:
            vocabulary = (await target.run(embedding_table)).index
        except Exception:  # without the encoder's vocabulary, typos into real words go unnoticed
            vocabulary = {}

        templates_name = f"{task_code}-templates"
        plan: list[tuple[str, Any, str]] = []  # (row name, adversary, why not measured)
        for name in (*EDIT_ADVERSARIES, templates_name, "llm"):
            adversary = registry.adversaries.get(name)
            if adversary is None:
                why = (
                    f"the {task_code} plugin registers no {name} adversary (its adversaries.py is missing or "
                    "failed to load)"
                    if name == templates_name
                    else f"no adversary {name!r} is installed"
                )
            else:
                try:
                    why = adversary.unsuitable(task, settings)
                except Exception as exc:
                    why = f"{type(exc).__name__}: {exc}"
                if name == "llm" and why and not getattr(settings, "llm_adversary_url", None):
                    why = (
                        "DYNAFORGE_LLM_ADVERSARY_URL is not set, so the llm adversary is off (it asks an "
                        "OpenAI-compatible chat endpoint, none is configured here); neither with drafts nor from "
                        "the context alone"
                    )
            plan.append((name, adversary, why or ""))

        draft_rows = {name: Row(name, "draft", not_measured=why or None) for name, _, why in plan}
        free_rows = {
            name: Row(name, "no draft", not_measured=why or None)
            for name, adversary, why in plan
            if adversary is not None and not adversary.needs_draft and not why
        }
        # Draft attacks item by item, every adversary on an item before the next, so load drift hits all alike.
        for k, item in enumerate(items):
            for name, adversary, why in plan:
                if why:
                    continue
                rng = random.Random(f"{seed}/{task_code}/{name}/draft/{k}")
                await _attack(
                    draft_rows[name], adversary, task, target, item.context, item.draft, rng, perturbations,
                    settings, budget, item_s, vocabulary,
                )  # fmt: skip
        for k, context in enumerate(_no_draft_contexts(task, items)):
            for name, adversary, why in plan:
                if why or name not in free_rows:
                    continue
                rng = random.Random(f"{seed}/{task_code}/{name}/context/{k}")
                await _attack(
                    free_rows[name], adversary, task, target, context, None, rng, perturbations, settings, budget,
                    item_s, vocabulary,
                )  # fmt: skip
        measured = [r for r in (*draft_rows.values(), *free_rows.values()) if not r.not_measured]
        await _similarity(target, measured)
    finally:
        target.close()

    results = []
    for row in (*draft_rows.values(), *free_rows.values()):
        results.append(
            Result(ID, row.line(task_code, str(skipped) if row.mode == "draft" else "-"), TARGET, True, True)
        )
    drawn = len(items) + skipped
    short = f" (fewer than {n}: every usable row was drawn)" if len(items) < n else ""
    note = (
        f"{task_code:<10} note: {rows.source}; {len(items)} drafts the target got right{short}, drawn in turn from "
        f"{'each paragraph' if task_code == 'qa' else 'each label'}; {skipped} of {drawn} drawn skipped (target "
        f"already wrong), {refused} rows refused by the task's checks; target {loaded}; {target.calls} target "
        f"calls; {time.perf_counter() - started:.0f}s"
    )
    results.append(Result(ID, note, TARGET, True, info=True))
    for row in (draft_rows.get(templates_name), free_rows.get(templates_name)):
        if row is not None and not row.not_measured:
            rules = ", ".join(f"{r} {row.fooled_by[r]}/{row.offered[r]}" for r in sorted(row.offered))
            rules = rules or f"no rule offered a rewrite for any of the {row.items} items"
            results.append(
                Result(ID, f"{task_code:<10} {row.adversary} ({row.mode}), fooled/asked by rule: {rules}", TARGET,
                       True, info=True)
            )  # fmt: skip
    search = draft_rows.get("perturbation-search")
    if search is not None and search.edit_kinds:
        kinds = ", ".join(f"{k} {v}" for k, v in search.edit_kinds.most_common())
        results.append(
            Result(ID, f"{task_code:<10} perturbation-search edits in fooling candidates: {kinds}", TARGET, True, True)
        )
    return results


def _settings() -> Any:
    """The platform's settings from the environment (the llm adversary reads its endpoint there), or None."""
    try:
        from dynaforge.settings import Settings

        return Settings()
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------- entry points


def _have_data() -> bool:
    return DATA.is_dir()


async def run(ctx: Context | None) -> list[Result]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    threads = ctx.threads if ctx is not None else (_settings_int("BENCH_THREADS", 0) or default_threads())
    n = _settings_int("BENCH_ADV_ITEMS", 40)
    budget = _settings_int("BENCH_ADV_BUDGET", 48)
    item_s = float(os.environ.get("BENCH_ADV_ITEM_S", "") or 30.0)
    seed = _settings_int("BENCH_ADV_SEED", 20260517)
    wanted = [t.strip() for t in os.environ.get("BENCH_ADV_TASKS", ",".join(TASKS)).split(",") if t.strip()]
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    head = (
        f"adversaries vs default targets: {n} drafts per task, budget {budget} target queries and {item_s:g} s per "
        f"item, seed {seed}, torch {threads} thread(s); {os.cpu_count()} cores, {cpu_model()}, load average {load}"
    )
    results = [Result(ID, head, TARGET, True, info=True)]
    if not _have_data():
        results.append(Result(ID, f"not measured: no shared data at {DATA} (set BENCH_DATA)", TARGET, True, True))
        return results
    unknown = [t for t in wanted if t not in TASKS]
    if unknown:
        results.append(Result(ID, f"not measured: unknown task(s) {', '.join(unknown)} in BENCH_ADV_TASKS", TARGET,
                              True, info=True))  # fmt: skip
    results.append(Result(ID, HEADER, TARGET, True, info=True))
    for task_code in [t for t in TASKS if t in wanted]:
        try:
            results += await _task(task_code, n, budget, item_s, seed, threads)
        except Exception as exc:  # report and go on with the next task
            traceback.print_exc(file=sys.stderr)
            line = f"{task_code:<10} not measured: {type(exc).__name__}: {exc}"
            results.append(Result(ID, line, TARGET, True, info=True))
    return results


def main() -> int:
    """``python -m bench.adversaries``: the figures without the benchmark server (which ADV does not use)."""
    for result in asyncio.run(run(None)):
        print(result.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
