"""The data-selection task: short headline-like texts classified by topic, scored DataPerf-style.

Participants submit data, not models: a selection of at most :data:`BUDGET` items from a training pool the task's
owners upload (a STANDARD data set). The platform trains the task's fixed recipe (naive Bayes over words,
:mod:`dynaforge_data_selection.recipe`) on the selection inside an evaluation job and scores it on the task's
SCORING sets, so the leaderboard ranks selections. The task accepts no other kind of submission.

Annotators can still write examples the usual way: the model in the loop is the same recipe trained on the
package's seed set, and an annotator fools it with a headline it gives the wrong topic.
"""

from __future__ import annotations

from dynaforge import ChoiceField, DataSelection, ModelSpec, Role, Task, TextField, hookimpl

from dynaforge_data_selection.data import LABELS

CODE = "data-selection"
#: How many pool items a selection may hold.
BUDGET = 40


class DataSelectionTask(Task):
    code = CODE
    name = "Data selection: headline topics"
    description = "Pick the training data: the same simple model, trained on your selection, is ranked on a hidden set."
    instructions = (
        "Annotators: write a short headline-like sentence about sports, science, food or travel and give its topic; "
        "you fool the model when it gives your headline another topic, and the headline must still read as plainly "
        "about the topic you chose. Participants: choose at most 40 items of the task's training pool; the platform "
        "trains the task's fixed recipe (naive Bayes over words) on exactly those items and scores it on a test set "
        "you never see. The pool has noise on purpose: some items carry the wrong label and some are copies of "
        "one another, so leaving them out and covering every topic pays."
    )
    labels = LABELS
    fields = (
        TextField(name="text", role=Role.INPUT, min_length=10, max_length=200, description="A headline-like sentence."),
        ChoiceField(name="label", role=Role.TARGET, description="The topic the headline is about."),
    )
    metrics = ("accuracy", "macro_f1")
    principal_metric = "macro_f1"  # the test set is balanced; macro F1 also punishes a selection blind to a topic
    perturbations = ("typo", "lowercase")  # neither changes a headline's topic
    submission_kinds = ("selection",)
    data_selection = DataSelection(
        budget=BUDGET,
        trainer="dynaforge_data_selection.recipe:fit",
        description=(
            "Multinomial naive Bayes over lower-cased words with Laplace smoothing, trained on the selected items' "
            "text and label; labels the selection lacks are never predicted."
        ),
    )
    default_target_models = (
        ModelSpec(
            name="recipe-on-seed", backend="python", config={"factory": "dynaforge_data_selection.recipe:load_seed"}
        ),
    )
    sample_examples = (
        {"text": "The veteran keeper saves two penalties in the shootout.", "label": "sports"},
        {"text": "Astronomers spot water vapour around a small cold planet.", "label": "science"},
        {"text": "A market stall sells warm flatbread stuffed with spinach.", "label": "food"},
        {"text": "The coastal railway adds a summer service to the old harbour.", "label": "travel"},
    )


@hookimpl
def register_tasks(register):
    register(DataSelectionTask())
