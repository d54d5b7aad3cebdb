"""The demo's scoring set: French sentences made from templates of this plugin's own, each with the English
references a careful translator would accept (deterministic, so every demo shows the same board)."""

from __future__ import annotations

SUBJECTS = (
    ("Le chat", ("The cat",)),
    ("Ma sœur", ("My sister",)),
    ("Le voisin", ("The neighbour", "The neighbor")),
)
PREDICATES = (
    ("mange une pomme", ("eats an apple", "is eating an apple")),
    ("lit le journal", ("reads the newspaper", "is reading the newspaper")),
    ("ferme la fenêtre", ("closes the window", "is closing the window")),
    ("attend le bus", ("waits for the bus", "is waiting for the bus")),
    ("prépare le dîner", ("prepares dinner", "is making dinner")),
    ("arrose les fleurs", ("waters the flowers", "is watering the flowers")),
    ("ouvre la porte", ("opens the door", "is opening the door")),
    ("regarde la télévision", ("watches television", "is watching TV")),
)


def _items() -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    for french_subject, english_subjects in SUBJECTS:
        for french_predicate, english_predicates in PREDICATES:
            references = [f"{s} {p}." for s in english_subjects for p in english_predicates][:3]
            items.append({"source": f"{french_subject} {french_predicate}.", "translation": references})
    return items


#: 24 sentences, each with two or three references: enough for a board whose intervals mean something, few enough
#: for the demo's small engine to translate with its perturbed copies in about half a minute on two cores.
SCORING_SET: tuple[dict[str, object], ...] = tuple(_items())
