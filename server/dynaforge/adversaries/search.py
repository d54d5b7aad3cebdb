"""``perturbation-search``: greedy composition of a task's robustness perturbations, guided by the target.

The adversary starts from an annotator's draft and keeps its claimed gold. It only ever applies the task's registered
*robustness* perturbations (typos, case, punctuation, contractions, spacing: edits that leave the meaning, and so the
gold, as it was); fairness perturbations change who the text is about and are never used. The search, like the
word-importance attacks of the adversarial-NLP literature, runs in three stages:

1. ask the target about the draft (one query); a draft that already fools it needs no help, so nothing is proposed;
2. rank the words by importance: the draft with one word deleted, for each word, in one batch; a word matters as much
   as its deletion lowers the probability the target gives the gold. Deletions only rank words and are never
   proposed (deleting "not" changes the gold). A target that gives no probabilities gets a seeded random order;
3. walk the words, most important first: at each, ask about the perturbations applied to that word alone (several
   seeded draws each, a typo at different letters) and, at the first word, the perturbations applied to the whole
   text; keep the change that lowers the gold's probability most and go on from there (the edits compose), until the
   target is fooled, the words or the edits allowed run out, or the oracle's budget does. Without probabilities
   there is no best change to keep: each word is tried on the draft as written (one edit per candidate).

Every fooling text found in the step that fooled the target comes back as a :class:`Candidate` with its verdict. The
reusable parts (:func:`word_importance`, the word helpers :func:`split_words`, :func:`replace_word`,
:func:`delete_word`, :func:`keep_case`, the word lists :data:`STOP_WORDS` and :data:`NEGATIONS`, and the
:class:`GreedyEditor` that runs stage 3 on the :class:`Proposal` objects an adversary makes) serve
:mod:`dynaforge.adversaries.embedding` too.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dynaforge.adversaries.base import (
    Adversary,
    AttackRequest,
    AttackStopped,
    Candidate,
    Oracle,
    Verdict,
    claimed_gold,
    fooling,
    text_input_fields,
)
from dynaforge.errors import InvalidInput

if TYPE_CHECKING:
    from dynaforge.tasks.base import Perturbation, Task

# ---------------------------------------------------------------------------------------------- words

#: A word: letters or digits, with inner apostrophes ("don't", "O'Neil"). Punctuation and hyphens stay outside words,
#: so that editing a word leaves "terrible," its comma and "well-made" its hyphen.
WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
# One or more words separated by single spaces: what a word-level edit may turn a word into ("don't" -> "do not").
_WORDS_ONLY_RE = re.compile(rf"{WORD_RE.pattern}(?: {WORD_RE.pattern})*")


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: Words that negate: swapping or dropping one changes the gold, so no adversary here ever swaps them or swaps a word
#: for them. Written for the project; short on purpose (with any word ending in "n't", see :func:`is_negation`).
NEGATIONS: frozenset[str] = _word_set(
    "not no never none nobody nothing nowhere neither nor cannot without hardly barely scarcely seldom rarely"
)
#: Function words (and the negations): rankings put them last, and the embedding adversary neither swaps them nor
#: swaps a word for one. The stems a tokenizer leaves of "isn't", "don't"... are in, as the vocabulary has them.
STOP_WORDS: frozenset[str] = NEGATIONS | _word_set(
    """a an the this that these those there here it its it's i me my mine we us our ours you your yours he him his
    she her hers they them their theirs who whom whose which what when where why how and or but if then than so as
    because while though although of to in on at by for with from into onto about over under up down out off again
    is am are was were be been being do does did done have has had having will would shall should can could may
    might must just also too very only all any both each few more most less least other some such own same s t d ll
    m re ve let lets i'm you're we're they're i've you've we've they've i'll you'll he'll she'll we'll they'll it'll
    he's she's that's there's what's who's where's let's isn aren wasn weren don doesn didn hasn haven hadn won
    wouldn couldn shouldn mustn ain"""
)


def is_negation(word: str) -> bool:
    """Whether ``word`` negates ("not", "never", "don't", "isn't", ...): such words are never swapped."""
    low = word.lower().replace("\u2019", "'")
    return low in NEGATIONS or low.endswith("n't")


def is_stop_word(word: str) -> bool:
    """A function word or a negation (what rankings put last and the embedding adversary never swaps)."""
    low = word.lower().replace("\u2019", "'")
    return low in STOP_WORDS or is_negation(low)


def split_words(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of the words of ``text``, in order (see :data:`WORD_RE`): the punctuation and
    whitespace around them are not part of them, so replacing a word keeps its punctuation where it was."""
    return [m.span() for m in WORD_RE.finditer(text)]


def replace_word(text: str, span: tuple[int, int], new: str) -> str:
    """``text`` with the word at ``span`` replaced by ``new``; everything else, punctuation included, as it was."""
    start, end = span
    return text[:start] + new + text[end:]


def delete_word(text: str, span: tuple[int, int]) -> str:
    """``text`` without the word at ``span``, and without the gap it leaves: the whitespace before the word goes
    ("It was terrible." -> "It was."), and so does a comma it leaves before punctuation ("Bad, really." -> "Bad.");
    a first word takes the punctuation right after it and the gap with it ("Terrible, really." -> "really.")."""
    start, end = span
    before, after = text[:start], text[end:]
    if before.strip():
        kept = before.rstrip()
        if re.match(r"[^\w\s]", after):
            kept = kept.rstrip(",;:")  # "Bad, really." -> "Bad." rather than "Bad,."
        return kept + after
    rest = after.lstrip()
    rest = re.sub(r"^[^\w\s]+(?=\s|$)", "", rest).lstrip()  # a comma or stop left by the first word
    return before + rest


def keep_case(original: str, replacement: str) -> str:
    """``replacement`` in the case pattern of ``original``: ALL CAPS (two letters or more), Capitalised, or as
    given (lower case)."""
    letters = [ch for ch in original if ch.isalpha()]
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return replacement.upper()
    if letters and original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _word_list(text: str) -> list[str]:
    return [text[s:e].casefold() for s, e in split_words(text)]


def _clip(text: str, words: int = 3) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " ..."


def describe_change(old: str, new: str) -> str:
    """A short, checkable account of how ``new`` differs from ``old``: the changed stretch of whitespace-separated
    tokens (``'bad.' -> 'bad'``; its first words when it is long, as for a text put in upper case), or, when only
    the spacing changed, the words around the changed gap."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if changed:
        i1, i2 = changed[0][1], changed[-1][2]
        j1, j2 = changed[0][3], changed[-1][4]
        if i2 - i1 > 4:  # the whole text, say in upper case: its start is enough to check it
            return f"{_clip(' '.join(a[i1:i2]))!r} -> {_clip(' '.join(b[j1:j2]))!r}"
        return f"{' '.join(a[i1:i2])!r} -> {' '.join(b[j1:j2])!r}"
    chars = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    ops = [op for op in chars.get_opcodes() if op[0] != "equal"]
    if not ops:
        return "(no change)"
    start, end = ops[0][1], ops[-1][2]
    lo = old.rfind(" ", 0, max(0, start - 1)) + 1
    hi = old.find(" ", end + 1)
    hi = len(old) if hi < 0 else hi
    nlo = lo
    nhi = hi + (len(new) - len(old))
    return f"{old[lo:hi]!r} -> {new[nlo:nhi]!r}"


# ---------------------------------------------------------------------------------------------- importance


def draft_text_fields(request: AttackRequest) -> list[str]:
    """The task's text input fields that the request's draft fills (what an edit-based adversary may change)."""
    draft = request.draft or {}
    return [
        name for name in text_input_fields(request.task) if isinstance(draft.get(name), str) and draft[name].strip()
    ]


async def word_importance(
    request: AttackRequest,
    oracle: Oracle,
    limit: int = 32,
    *,
    spend: int | None = None,
    function_words: bool = True,
) -> list[tuple[str, int, float]]:
    """Rank the words of the draft's text input fields: ``[(field, word index, importance), ...]``, most important
    first (the index counts :func:`split_words` of the draft's field).

    At most ``limit`` positions are ranked, content words before function words (in text order within each; no
    function word when ``function_words`` is false), so a long text spends its queries where a change can matter.
    Importance is how much deleting the word lowers the probability the target gives the draft's gold (negative when
    the deletion raises it): the draft (free when already asked) and the deletions, in one batch of at most
    ``spend`` queries (default: all), trimmed to ``oracle.remaining``. A position left unasked (out of budget, or
    the field's only word) counts 0, so it comes after the words that matter and before those whose deletion helps
    the gold. When the target gives no probabilities no deletion is asked: the content words, then the function
    words, come back each in an order shuffled by ``request.rng``, all with importance 0. May raise
    :class:`AttackStopped` (out of time, or no query left for the draft).
    """
    if request.draft is None:
        return []
    draft = dict(request.draft)
    content: list[tuple[str, int]] = []
    function: list[tuple[str, int]] = []
    for name in draft_text_fields(request):
        text = draft[name]
        for index, (s, e) in enumerate(split_words(text)):
            (function if is_stop_word(text[s:e]) else content).append((name, index))
    positions = (content + (function if function_words else []))[: max(0, limit)]
    if not positions:
        return []
    start = await oracle.query_one(draft)
    if start.gold_probability is None:
        shuffled = [p for p in positions if p in content], [p for p in positions if p not in content]
        for part in shuffled:
            request.rng.shuffle(part)
        return [(name, index, 0.0) for name, index in shuffled[0] + shuffled[1]]
    asked: list[tuple[tuple[str, int], dict[str, Any]]] = []
    for name, index in positions:
        deleted = delete_word(draft[name], split_words(draft[name])[index])
        if deleted.strip():
            asked.append(((name, index), {**draft, name: deleted}))
    asked = asked[: min(oracle.remaining, len(asked) if spend is None else max(0, spend))]
    verdicts = await oracle.query([fields for _, fields in asked]) if asked else []
    importance = dict.fromkeys(positions, 0.0)
    base = start.gold_probability
    for (position, _), verdict in zip(asked, verdicts, strict=True):
        if verdict.gold_probability is not None:
            importance[position] = base - verdict.gold_probability
    order = {position: i for i, position in enumerate(positions)}
    ranked = sorted(positions, key=lambda position: (-importance[position], order[position]))
    return [(name, index, importance[(name, index)]) for name, index in ranked]


# ---------------------------------------------------------------------------------------------- greedy search


@dataclass(frozen=True)
class Proposal:
    """An edit an adversary proposes to the current fields: ``field``'s whole new ``text``, the ``edit`` as a person
    reads it (``"statement: 'terrible' -> 'terirble' (typo)"``), and its ``source`` (a perturbation's name...)."""

    field: str
    text: str
    edit: str
    source: str = ""


class GreedyEditor:
    """The state of a greedy edit search on one draft: the current fields, the gold's current probability, the edits
    made so far, and the fooling candidates found.

    :meth:`locate` finds where a word of the draft now is (None once an edit changed or merged it: a word is edited
    at most once). :meth:`step` asks the oracle about a batch of proposals (validated by the task, deduplicated,
    trimmed to the budget), records the fooling ones, and keeps the proposal that lowers the gold's probability most
    as the new current state. When the target gives no probabilities there is no best: it keeps the caller's pick,
    or by default nothing (each word is then tried on the draft as it stands, and no blind edit piles up).
    """

    def __init__(self, request: AttackRequest, oracle: Oracle, start: Verdict, *, method: str, why: str):
        if request.draft is None:
            raise ValueError("a greedy edit search needs a draft")
        self.request = request
        self.oracle = oracle
        self.task: Task = request.task
        self.draft: dict[str, Any] = dict(request.draft)
        self.fields: dict[str, Any] = dict(request.draft)
        self.start_probability = start.gold_probability
        self.probability = start.gold_probability
        self.edits: list[str] = []
        self.found: list[Candidate] = []
        self.last: Proposal | None = None  # the proposal the last step kept, if any
        self.method = method
        self.why = why
        # For each text field: the draft word index of each current word (None: edited or new).
        self._origins: dict[str, list[int | None]] = {
            name: list(range(len(split_words(self.draft[name])))) for name in draft_text_fields(request)
        }
        # A draft the task itself refuses (say, without its context fields) is not the adversary's to fix: its
        # candidates are then asked about as they are.
        self._validates = self._valid(self.draft) is not None

    def _valid(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.task.validate_example(fields, self.request.context or None)
        except InvalidInput:
            return None

    def locate(self, name: str, draft_index: int) -> tuple[int, int] | None:
        """The current span of word ``draft_index`` of the draft's field ``name``, or None once it was edited."""
        origins = self._origins.get(name, [])
        if draft_index not in origins:
            return None
        return split_words(self.fields[name])[origins.index(draft_index)]

    def rationale(self, edits: Sequence[str], verdict: Verdict) -> str:
        """What a person checks: the edits, why the gold holds, and how far the target's confidence fell."""
        gold = ", ".join(f"{k}={v}" for k, v in claimed_gold(self.task, self.draft).items())
        text = f"{self.method}: {'; '.join(edits)}. {self.why}, so the gold stays {gold}."
        if self.start_probability is not None and verdict.gold_probability is not None:
            text += (
                f" The target's probability for it fell from {self.start_probability:.2f} to "
                f"{verdict.gold_probability:.2f}."
            )
        return text

    def _apply(self, proposal: Proposal, fields: dict[str, Any], verdict: Verdict) -> None:
        old, new = _word_list(self.fields[proposal.field]), _word_list(fields[proposal.field])
        origins = self._origins.get(proposal.field, [])
        updated: list[int | None] = [None] * len(new)
        for tag, i1, i2, j1, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag == "equal":
                updated[j1 : j1 + (i2 - i1)] = origins[i1:i2]
        self._origins[proposal.field] = updated
        self.fields = fields
        self.probability = verdict.gold_probability
        self.edits.append(proposal.edit)
        self.last = proposal

    async def step(
        self, proposals: Sequence[Proposal], *, pick: Callable[[Sequence[Proposal]], int | None] | None = None
    ) -> list[tuple[Proposal, Verdict]]:
        """Ask about ``proposals`` (each applied to the current fields) in one batch; record every fooling one in
        :attr:`found`; keep the best as the new current state when it lowers the gold's probability. Without
        probabilities it keeps ``pick(asked)`` (an index, or None; default: nothing). Returns what was asked with its
        verdict ([] when nothing new was proposed). Raises :class:`AttackStopped` when no query is left."""
        self.last = None
        batch: list[tuple[Proposal, dict[str, Any]]] = []
        seen = {_fields_key(self.fields)}
        for proposal in proposals:
            fields: dict[str, Any] | None = {**self.fields, proposal.field: proposal.text}
            if self._validates and fields is not None:
                fields = self._valid(fields)
            if fields is None or not str(fields.get(proposal.field, "")).strip():
                continue
            key = _fields_key(fields)
            if key not in seen:
                seen.add(key)
                batch.append((proposal, fields))
        if not batch:
            return []
        batch = batch[: self.oracle.remaining]
        if not batch:
            raise AttackStopped("budget", "no query left for the next step")
        verdicts = await self.oracle.query([fields for _, fields in batch])
        for (proposal, fields), verdict in zip(batch, verdicts, strict=True):
            if verdict.fooled:
                edits = (*self.edits, proposal.edit)
                self.found.append(
                    Candidate(fields=fields, rationale=self.rationale(edits, verdict), edits=edits, verdict=verdict)
                )
        if self.probability is not None:
            scored = [(v.gold_probability, i) for i, v in enumerate(verdicts) if v.gold_probability is not None]
            if scored and min(scored)[0] < self.probability - 1e-9:
                best = min(scored)[1]
                self._apply(batch[best][0], batch[best][1], verdicts[best])
        elif pick is not None:
            chosen = pick([proposal for proposal, _ in batch])
            if chosen is not None:
                self._apply(batch[chosen][0], batch[chosen][1], verdicts[chosen])
        return [(proposal, verdict) for (proposal, _), verdict in zip(batch, verdicts, strict=True)]

    def results(self) -> list[Candidate]:
        """The fooling candidates found, lowest gold probability first, without repeats."""
        return fooling(self.found, len(self.found))


def _fields_key(fields: dict[str, Any]) -> str:
    return repr(sorted(fields.items()))


# ---------------------------------------------------------------------------------------------- the adversary


def _default_kinds() -> dict[str, str]:
    from dynaforge.defaults.perturbations import DEFAULT_PERTURBATIONS

    return {p.name: p.kind for p in DEFAULT_PERTURBATIONS}


class PerturbationSearch(Adversary):
    """Greedy composition of the task's robustness perturbations at the target's most important words (see the
    module's docstring).

    ``max_words``: the words ranked by deletion (one query each, and never more than half the budget left);
    ``draws``: the seeded draws of each perturbation on one word (a typo at different letters); ``max_edits``: the
    edits one candidate may compose (beyond a few the text stops reading naturally); ``word_only``: perturbations
    applied to single words only, never to the whole text (a whole-text typo hits a random word, which the word-level
    search does with purpose).
    """

    name: ClassVar[str] = "perturbation-search"
    description: ClassVar[str] = (
        "Greedy composition of the task's robustness perturbations (typos, case, punctuation, contractions, spacing) "
        "at the words the target relies on most; keeps the draft's gold."
    )
    needs_draft: ClassVar[bool] = True

    def __init__(
        self, *, max_words: int = 32, draws: int = 3, max_edits: int = 6, word_only: tuple[str, ...] = ("typo",)
    ):
        self.max_words = max_words
        self.draws = draws
        self.max_edits = max_edits
        self.word_only = word_only

    def unsuitable(self, task: Task, settings: Any = None) -> str | None:
        reason = super().unsuitable(task, settings)
        if reason:
            return reason
        if not text_input_fields(task):
            return f"{self.name} edits free text, and task {task.code} has no text input field"
        kinds = _default_kinds()
        # A perturbation another plugin registered is unknown here: it may be a robustness one, so it does not refuse.
        if not any(kinds.get(name, "robustness") == "robustness" for name in task.perturbations):
            return f"{self.name} composes robustness perturbations, and task {task.code} names none"
        return None

    def word_proposals(
        self, perturbations: Sequence[Perturbation], name: str, text: str, span: tuple[int, int], rng: random.Random
    ) -> list[Proposal]:
        """Each perturbation applied to the word at ``span`` alone (``draws`` seeded draws each), as proposals;
        results that are no longer words (a full stop added to a word) are left out."""
        word = text[span[0] : span[1]]
        out: list[Proposal] = []
        seen = {word}
        for perturbation in perturbations:
            for _ in range(self.draws):
                new = perturbation.apply(word, rng)
                if new in seen or not _WORDS_ONLY_RE.fullmatch(new):
                    continue
                seen.add(new)
                edit = f"{name}: {word!r} -> {new!r} ({perturbation.name})"
                out.append(Proposal(name, replace_word(text, span, new), edit, perturbation.name))
        return out

    def text_proposals(
        self, perturbations: Sequence[Perturbation], fields: dict[str, Any], names: Sequence[str], rng: random.Random
    ) -> list[Proposal]:
        """Each perturbation (but the word-only ones) applied to each whole text field, as proposals."""
        out: list[Proposal] = []
        for perturbation in perturbations:
            if perturbation.name in self.word_only:
                continue
            for name in names:
                text = fields[name]
                new = perturbation.apply(text, rng)
                if new != text and new.strip():
                    edit = f"{name}: {describe_change(text, new)} ({perturbation.name})"
                    out.append(Proposal(name, new, edit, perturbation.name))
        return out

    async def attack(self, request: AttackRequest, oracle: Oracle) -> list[Candidate]:
        if request.draft is None:
            return []
        # only those that keep the gold: the candidates keep the draft's
        perturbations = [p for p in request.perturbations.values() if p.kind == "robustness" and p.gold == "kept"]
        names = draft_text_fields(request)
        if not perturbations or not names:
            return []
        editor: GreedyEditor | None = None
        try:
            start = await oracle.query_one(dict(request.draft))
            if start.fooled:
                return []
            editor = GreedyEditor(
                request,
                oracle,
                start,
                method="robustness perturbations",
                why="Robustness perturbations change the surface of the text (typos, case, punctuation, contractions, "
                "spacing), not its meaning",
            )
            # The ranking spends at most half of what is left, so the search keeps at least as many queries.
            ranking = await word_importance(request, oracle, self.max_words, spend=oracle.remaining // 2)
            await self._search(request, editor, perturbations, names, ranking)
        except (AttackStopped, TimeoutError):  # out of budget or time (a slow batch times out): keep what was found
            pass
        return editor.results() if editor is not None else []

    async def _search(
        self,
        request: AttackRequest,
        editor: GreedyEditor,
        perturbations: Sequence[Perturbation],
        names: Sequence[str],
        ranking: Sequence[tuple[str, int, float]],
    ) -> None:
        rng = request.rng
        # Whole-text perturbations join the first step; those that lowered the gold's probability there (and were
        # not kept) join the later steps too, where on top of word edits they may complete a flip. Each is kept once.
        promising: set[str] | None = None
        kept_whole: set[str] = set()
        positions: list[tuple[str, int] | None] = [(name, index) for name, index, _ in ranking] or [None]
        for position in positions:
            if len(editor.edits) >= self.max_edits:
                break
            proposals: list[Proposal] = []
            if position is not None:
                span = editor.locate(*position)
                if span is None:
                    continue
                proposals += self.word_proposals(perturbations, position[0], editor.fields[position[0]], span, rng)
            whole = [
                p for p in perturbations if p.name not in kept_whole and (promising is None or p.name in promising)
            ]
            whole_proposals = self.text_proposals(whole, editor.fields, names, rng)
            # Without probabilities nothing is kept between steps (the editor's default): blind typos would pile up,
            # so each word is tried on the draft as written, and a single edit has to fool the target.
            asked = await editor.step(proposals + whole_proposals)
            if promising is None and asked:
                promising = {
                    proposal.source
                    for proposal, verdict in asked
                    if proposal in whole_proposals
                    and verdict.gold_probability is not None
                    and editor.start_probability is not None
                    and verdict.gold_probability < editor.start_probability
                }
            if editor.last is not None and editor.last in whole_proposals:
                kept_whole.add(editor.last.source)
            if editor.found:
                break
