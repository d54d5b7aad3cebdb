"""Default text perturbations usable by any English text task.

Every perturbation has a ``kind`` (:data:`KINDS`):

- **robustness** (the meaning and the gold label stay the same, only the surface changes): ``typo``, ``lowercase``,
  ``uppercase``, ``punctuation``, ``contractions``, ``whitespace``;
- **fairness** (who the text is about changes, nothing else): ``gender_swap``, ``name_swap`` (first names of the
  other gender, same origin group), ``name_origin_swap`` (first names of another origin group, same gender).

The robustness perturbations change an example's input fields, each on its own. The fairness ones change the whole
example (``scope="example"``: its context and input fields together, see :meth:`dynaforge.Task.perturb`), and the
name swaps give a name the same replacement in every field: a person swapped in the input alone would no longer
be the one the context is about. All keep the gold.

The word lists (:data:`CONTRACTIONS`, the gendered word pairs, :data:`NAME_GROUPS`) are written by the project,
not taken from any data set or paper; they are small on purpose and easy to read. Each perturbation keeps the
text's shape (no field becomes empty or grows unboundedly), so a perturbed example still fits its task's schema,
and each is a pure function of the text and the seeded ``random.Random`` it is given.
"""

from __future__ import annotations

import random
import re

from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Perturbation

KINDS = ("robustness", "fairness")  # the values of Perturbation.kind


def typo(text: str, rng: random.Random) -> str:
    """Swap two adjacent letters inside one word of four or more letters (a common keyboard slip)."""
    words = text.split(" ")

    def swappable(word: str) -> list[int]:
        # positions of two adjacent, different letters (swapping equal ones would change nothing)
        return [
            j for j in range(len(word) - 1) if word[j].isalpha() and word[j + 1].isalpha() and word[j] != word[j + 1]
        ]

    candidates = [i for i, w in enumerate(words) if sum(ch.isalpha() for ch in w) >= 4 and swappable(w)]
    if not candidates:
        return text
    i = rng.choice(candidates)
    word = words[i]
    j = rng.choice(swappable(word))
    words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    return " ".join(words)


def lowercase(text: str, rng: random.Random) -> str:
    """Everything in lower case."""
    return text.lower()


def uppercase(text: str, rng: random.Random) -> str:
    """Everything in upper case."""
    return text.upper()


def punctuation(text: str, rng: random.Random) -> str:
    """Drop the sentence's final punctuation, or add a full stop when it has none."""
    stripped = text.rstrip()
    if not stripped:
        return text
    if stripped[-1] in ".!?;:":
        return stripped.rstrip(".!?;:").rstrip() or text
    return stripped + "."


# ---------------------------------------------------------------------------------------------- contractions
# (expanded, contracted, how). The project's list of common English contractions whose two forms mean the same:
#   "both"     swapped both ways;
#   "contract" only the expanded form is contracted: the contraction is ambiguous ("it's" is "it is" or "it has"),
#              so it is never expanded;
#   "expand"   only the contraction is expanded: contracting the full form would read wrong ("I have a dog" is not
#              "I've a dog" in most English).
# Left out on purpose: 'd (had or would), 's after nouns (is, has or a possessive), ain't, shan't, let's (contracted,
# "let us know" is not "let's know").
CONTRACTIONS: tuple[tuple[str, str, str], ...] = (
    # negations: the verb and "not"
    ("do not", "don't", "both"),
    ("does not", "doesn't", "both"),
    ("did not", "didn't", "both"),
    ("is not", "isn't", "both"),
    ("are not", "aren't", "both"),
    ("was not", "wasn't", "both"),
    ("were not", "weren't", "both"),
    ("has not", "hasn't", "both"),
    ("have not", "haven't", "both"),
    ("had not", "hadn't", "both"),
    ("will not", "won't", "both"),
    ("would not", "wouldn't", "both"),
    ("could not", "couldn't", "both"),
    ("should not", "shouldn't", "both"),
    ("must not", "mustn't", "both"),
    ("cannot", "can't", "both"),
    # a pronoun and am / are / will
    ("I am", "I'm", "both"),
    ("you are", "you're", "both"),
    ("we are", "we're", "both"),
    ("they are", "they're", "both"),
    ("I will", "I'll", "both"),
    ("you will", "you'll", "both"),
    ("he will", "he'll", "both"),
    ("she will", "she'll", "both"),
    ("it will", "it'll", "both"),
    ("we will", "we'll", "both"),
    ("they will", "they'll", "both"),
    # "is" after a pronoun or question word: contracted only ('s may also stand for "has")
    ("it is", "it's", "contract"),
    ("he is", "he's", "contract"),
    ("she is", "she's", "contract"),
    ("that is", "that's", "contract"),
    ("there is", "there's", "contract"),
    ("what is", "what's", "contract"),
    ("who is", "who's", "contract"),
    ("where is", "where's", "contract"),
    # "have" after a pronoun, and "let's": expanded only
    ("I have", "I've", "expand"),
    ("you have", "you've", "expand"),
    ("we have", "we've", "expand"),
    ("they have", "they've", "expand"),
    ("let us", "let's", "expand"),
)
_APOSTROPHES = "'\u2019"
# Subjects that follow a negation in a question ("Don't you...", "Isn't it..."): "Do not you" is wrong, so a
# negation followed by one of them is not expanded.
_SUBJECTS = frozenset({"i", "you", "he", "she", "it", "we", "they", "there"})


def _contraction_tables() -> tuple[dict[str, tuple[str, bool]], dict[str, tuple[str, bool]]]:
    to_contract: dict[str, tuple[str, bool]] = {}  # "do not" -> ("don't", is a negation)
    to_expand: dict[str, tuple[str, bool]] = {}  # "don't" -> ("do not", is a negation)
    for expanded, contracted, how in CONTRACTIONS:
        negation = contracted.endswith("n't")
        if how in ("both", "contract"):
            to_contract[expanded.lower()] = (contracted, negation)
        if how in ("both", "expand"):
            to_expand[contracted.lower()] = (expanded, negation)
    return to_contract, to_expand


_TO_CONTRACT, _TO_EXPAND = _contraction_tables()


def _phrase_pattern(phrase: str) -> str:
    parts = [re.escape(word) for word in phrase.split(" ")]
    return r"[ \t]+".join(parts).replace("'", f"[{_APOSTROPHES}]")


# One alternation, longest phrases first, so that at any position the longest form wins; matched whole words only.
_CONTRACTIONS_RE = re.compile(
    r"(?<![\w'\u2019])(?:"
    + "|".join(_phrase_pattern(p) for p in sorted([*_TO_CONTRACT, *_TO_EXPAND], key=len, reverse=True))
    + r")(?![\w'\u2019])",
    re.IGNORECASE,
)
_NEXT_WORD_RE = re.compile(r"[ \t]+([A-Za-z]+)")


def _case_like(original: str, replacement: str) -> str:
    """``replacement`` (written in lower case but for "I") in the case pattern of ``original``: ALL CAPS,
    Capitalised, or lower case."""
    letters = [ch for ch in original if ch.isalpha()]
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return replacement.upper()
    if letters and letters[0].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement.lower()


def contractions(text: str, rng: random.Random) -> str:
    """Expand each contraction of :data:`CONTRACTIONS` and contract each expanded form, keeping the case.

    Every occurrence flips (the seed is not used). Where the swap could read wrong it is left out: a pronoun
    with am/are/will/is is contracted only when a word follows ("I know who you are." keeps "you are"), and a
    negation is not expanded in a question or before its subject ("Isn't it?" stays). New apostrophes follow
    the text's style (typographic ’ when the text uses only those).
    """
    apostrophe = "\u2019" if "\u2019" in text and "'" not in text else "'"

    def swap(match: re.Match) -> str:
        found = match.group(0)
        key = re.sub(r"[ \t]+", " ", found.replace("\u2019", "'")).lower()
        rest = text[match.end() :]
        if key in _TO_EXPAND:
            expanded, negation = _TO_EXPAND[key]
            if negation:
                following = _NEXT_WORD_RE.match(rest)
                sentence_end = re.search(r"[.!?]", rest)
                if (following and following.group(1).lower() in _SUBJECTS) or (
                    sentence_end and sentence_end.group(0) == "?"
                ):
                    return found
            return _case_like(found, expanded)
        contracted, negation = _TO_CONTRACT[key]
        if not negation and not _NEXT_WORD_RE.match(rest):
            return found  # "... who you are." / "Yes, I am": a contraction cannot end a clause
        return _case_like(found, contracted).replace("'", apostrophe)

    return _CONTRACTIONS_RE.sub(swap, text)


# ---------------------------------------------------------------------------------------------- whitespace
_GAP_RE = re.compile(r"[ \t]+")


def whitespace(text: str, rng: random.Random) -> str:
    """Change the whitespace between words: one gap in ten (at least one), each gets a second space, becomes a
    tab, or is removed (the two words run together). Characters of words and the text's leading and trailing
    whitespace are never touched; a text of one word comes back unchanged."""
    gaps = [m for m in _GAP_RE.finditer(text) if text[: m.start()].strip() and text[m.end() :].strip()]
    if not gaps:
        return text
    chosen = sorted(rng.sample(range(len(gaps)), 1 + len(gaps) // 10))
    edits = {}
    for i in chosen:
        gap = gaps[i].group(0)
        edit = rng.choice(("double", "tab", "remove"))
        if edit == "double":
            edits[i] = gap + " "
        elif edit == "tab":
            edits[i] = "\t" if gap != "\t" else "  "
        else:
            edits[i] = ""
    out, last = [], 0
    for i, new in edits.items():
        out.append(text[last : gaps[i].start()])
        out.append(new)
        last = gaps[i].end()
    out.append(text[last:])
    return "".join(out)


# Pairs swapped both ways. "her" is ambiguous (him / his); "his" maps to "her" and "her" to "his".
_GENDER_PAIRS = (
    ("he", "she"),
    ("his", "her"),
    ("him", "her"),
    ("himself", "herself"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("king", "queen"),
    ("kings", "queens"),
    ("uncle", "aunt"),
    ("uncles", "aunts"),
    ("nephew", "niece"),
    ("mr", "mrs"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("dad", "mom"),
    ("grandfather", "grandmother"),
    ("boyfriend", "girlfriend"),
    ("actor", "actress"),
    ("waiter", "waitress"),
    ("male", "female"),
    ("males", "females"),
    ("guy", "gal"),
    ("sir", "madam"),
)
_GENDER_SWAP: dict[str, str] = {}
for _a, _b in _GENDER_PAIRS:
    _GENDER_SWAP.setdefault(_a, _b)
    _GENDER_SWAP.setdefault(_b, _a)

# First names by the origin a reader would commonly associate with them (the language or community the name comes
# from), each group with female and male names. Written for the project: common given names, not taken from any
# data set or paper. The groups are a name's perceived origin (what a model may pick up from it), not a statement
# about anyone who bears it. Names that are also common English words, places or are often unisex are left out, so
# a capitalised word that is a name here is very likely a first name.
NAME_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "english": {
        "female": ("Emma", "Olivia", "Chloe", "Hannah", "Emily", "Abigail"),
        "male": ("James", "Liam", "Noah", "Samuel", "Ethan", "Harry"),
    },
    "african_american": {
        "female": ("Keisha", "Imani", "Shanice", "Aaliyah", "Latrice", "Nia"),
        "male": ("Jamal", "Darnell", "Terrell", "Jalen", "Deshawn", "Lamar"),
    },
    "hispanic": {
        "female": ("Sofia", "Lucia", "Maria", "Valentina", "Camila", "Ximena"),
        "male": ("Mateo", "Diego", "Alejandro", "Javier", "Joaquin", "Carlos"),
    },
    "arabic": {
        "female": ("Aisha", "Fatima", "Zainab", "Layla", "Yasmin", "Mariam"),
        "male": ("Omar", "Tariq", "Khalid", "Youssef", "Hamza", "Karim"),
    },
    "south_asian": {
        "female": ("Priya", "Ananya", "Lakshmi", "Deepika", "Kavya", "Nisha"),
        "male": ("Arjun", "Rahul", "Vikram", "Rohan", "Sanjay", "Aditya"),
    },
    "east_asian": {
        "female": ("Mei", "Yuki", "Haruka", "Ling", "Minji", "Akiko"),
        "male": ("Wei", "Chen", "Hiroshi", "Takeshi", "Minho", "Haoran"),
    },
    "west_african": {
        "female": ("Amara", "Ngozi", "Abena", "Chiamaka", "Adaeze", "Folake"),
        "male": ("Kwame", "Kofi", "Chinedu", "Emeka", "Tunde", "Oluwaseun"),
    },
    "european": {
        "female": ("Ingrid", "Astrid", "Greta", "Svetlana", "Agnieszka", "Heidi"),
        "male": ("Lukas", "Ivan", "Sven", "Dmitri", "Matthias", "Piotr"),
    },
}
GENDERS = ("female", "male")
# Every name of one gender, whatever its group.
FIRST_NAMES: dict[str, tuple[str, ...]] = {
    gender: tuple(name for names in NAME_GROUPS.values() for name in names[gender]) for gender in GENDERS
}
_NAME_INFO: dict[str, tuple[str, str]] = {
    name.lower(): (group, gender)
    for group, by_gender in NAME_GROUPS.items()
    for gender, names in by_gender.items()
    for name in names
}
_WORD_RE = re.compile(r"[A-Za-z]+")
_NAME_RE = re.compile(r"\b[A-Za-z]+\b")  # a whole word: "Emma" in "Emma's", not in "Emmanuel" or "Emma2"


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def gender_swap(text: str, rng: random.Random) -> str:
    """Swap gendered words (he/she, father/mother, ...) everywhere in the text, keeping their case."""

    def swap(match: re.Match) -> str:
        word = match.group(0)
        other = _GENDER_SWAP.get(word.lower())
        return _match_case(word, other) if other else word

    return _WORD_RE.sub(swap, text)


def _swap_first_names(texts: dict[str, str], rng: random.Random, candidates) -> dict[str, str]:
    """Replace each capitalised first name of :data:`NAME_GROUPS` in ``texts`` (the fields of one example, by name)
    by a seeded pick of ``candidates(group, gender)``. A name gets one replacement used at each of its occurrences,
    in every text (the person named in a context is the one named in its input); two different names never get
    the same one, nor a name already in the texts (so the people of an example stay distinct); names are picked in
    order of first occurrence, text by text, so the result depends only on the texts and the seed."""
    present = {word.lower() for text in texts.values() for word in _NAME_RE.findall(text)}
    chosen: dict[str, str] = {}

    def swap(match: re.Match) -> str:
        word = match.group(0)
        info = _NAME_INFO.get(word.lower())
        if info is None or not word[:1].isupper():
            return word
        if word.lower() not in chosen:
            pool = candidates(*info)
            taken = present | {name.lower() for name in chosen.values()}
            chosen[word.lower()] = rng.choice([name for name in pool if name.lower() not in taken] or list(pool))
        return _match_case(word, chosen[word.lower()])

    return {name: _NAME_RE.sub(swap, text) for name, text in texts.items()}


def _other_gender(group: str, gender: str) -> tuple[str, ...]:
    return NAME_GROUPS[group]["male" if gender == "female" else "female"]


def _other_group(group: str, gender: str) -> tuple[str, ...]:
    return tuple(n for g, names in NAME_GROUPS.items() if g != group for n in names[gender])


def name_swap_example(texts: dict[str, str], rng: random.Random) -> dict[str, str]:
    """:func:`name_swap` over the texts of one example at once: each name gets the same replacement in all of them."""
    return _swap_first_names(texts, rng, _other_gender)


def name_origin_swap_example(texts: dict[str, str], rng: random.Random) -> dict[str, str]:
    """:func:`name_origin_swap` over the texts of one example at once: each name gets the same replacement in all of
    them."""
    return _swap_first_names(texts, rng, _other_group)


def name_swap(text: str, rng: random.Random) -> str:
    """Replace each known first name by a seeded pick of the other gender's names of the same origin group."""
    return name_swap_example({"text": text}, rng)["text"]


def name_origin_swap(text: str, rng: random.Random) -> str:
    """Replace each known first name by a seeded pick of the same gender's names from another origin group."""
    return name_origin_swap_example({"text": text}, rng)["text"]


DEFAULT_PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("typo", typo, "robustness", "Swap two adjacent letters in one word."),
    Perturbation("lowercase", lowercase, "robustness", "Lower-case the whole text."),
    Perturbation("uppercase", uppercase, "robustness", "Upper-case the whole text."),
    Perturbation("punctuation", punctuation, "robustness", "Drop or add the final punctuation mark."),
    Perturbation(
        "contractions",
        contractions,
        "robustness",
        "Expand contractions and contract their full forms (don't <-> do not), keeping the case.",
    ),
    Perturbation(
        "whitespace",
        whitespace,
        "robustness",
        "Double, tab or remove some spaces between words; words themselves untouched.",
    ),
    # The fairness swaps change who an example is about, in its context and its input alike: swapped in the
    # input alone, a name or a "she" would contradict the context and the gold would no longer hold.
    Perturbation(
        "gender_swap",
        gender_swap,
        "fairness",
        "Swap gendered words (he/she, son/daughter...) in the context and the input alike.",
        scope="example",
    ),
    Perturbation(
        "name_swap",
        name_swap,
        "fairness",
        "Swap first names for names of the other gender from the same origin group, the same name for the same "
        "person in the context and the input.",
        apply_example=name_swap_example,
    ),
    Perturbation(
        "name_origin_swap",
        name_origin_swap,
        "fairness",
        "Swap first names for names of the same gender from another origin group (English, Hispanic, "
        "Arabic, South Asian, ...), the same name for the same person in the context and the input.",
        apply_example=name_origin_swap_example,
    ),
)


@hookimpl(trylast=True)
def register_perturbations(register):
    for perturbation in DEFAULT_PERTURBATIONS:
        register(perturbation)
