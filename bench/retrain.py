"""RETRAIN: does retraining on a round's validated examples make the target model stronger? (informational)

For each of nli, sentiment and hatespeech, with the shared data sets (``../shared/data``, or ``BENCH_DATA``), on a
platform of its own (a throwaway SQLite database, the one task, its default target model in the loop):

1. the data set is split, seeded, into a **base** part (the task's base data for training jobs), a **round** part
   and a **held-out** part that no model here is trained or tuned on (nli: grouped by premise, so a premise never
   sits on two sides; sentiment: the base is a seeded part of SST-2 train, the round and held-out parts halves of
   SST-2 dev; hatespeech: stratified by label);
2. the round part is replayed as round 1: each row is written by an annotator with ``createExample`` (the target
   predicts it and the task decides ``fooled``) and accepted by an owner's vote; the round is split into
   train/dev/test sets with ``createRoundDatasets`` (60/10/30 here, not the default 80/10/10: a paired test on a
   tenth of a few hundred rows could decide nothing);
3. two training jobs run the task's recipe exactly as ``trainCandidateModel`` does (a confined child process): the
   **base** model on the base part alone, trained as the shipped weights were (``SHIPPED_RECIPE``: nli's head on the
   frozen encoder), standing for the shipped target on data it never saw, and the **candidate** on the base part
   plus the round's train set with the recipe's defaults (nli: a LoRA adapter too);
4. each model (and the shipped target, for reference) predicts the held-out part and the round's test set.

Printed per task: accuracy of base, candidate and shipped on the held-out part and on the round's test set, the
share of the round's test examples that fooled the round's target when they were written and still fool each model,
and McNemar's exact test (``dynaforge.evaluation.scoring.mcnemar``, what ``Task.pairedTest`` answers with) of the
candidate against the shipped target and against the base model on both sets: how many items only the candidate
gets right, how many only the other, and the two-sided p-value.
The shipped target's held-out figure is marked when its own training data overlaps the held-out part (nli and
hatespeech train on the same file). Lines end in INFO: the figures are what the note reports, not a target.

``BENCH_RETRAIN_TASKS`` (default ``nli,sentiment,hatespeech``) and ``BENCH_RETRAIN_ROUND`` (round rows per task,
default 600) make a run shorter.
"""

from __future__ import annotations

import asyncio
import csv
import os
import random
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Context, Result
from dynaforge.services import datasets as dataset_service
from dynaforge.tasks.fields import Role

ID = "RETRAIN"
TIMEOUT_S = 3600.0
DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parent.parent.parent / "shared" / "data"))
SEED = 20261126
NLI_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
#: How each task's shipped weights were trained, where not by its recipe's defaults: the base model is trained so, on
#: the base part alone, standing for the shipped target on data it never saw (the shipped weights themselves saw
#: this data for nli and hatespeech).
SHIPPED_RECIPE: dict[str, dict[str, Any]] = {"nli": {"encoder": "frozen"}}
ROUND_SPLITS = (("train", 0.6, "STANDARD"), ("dev", 0.1, "STANDARD"), ("test", 0.3, "SCORING"))


@dataclass
class Split:
    base: list[dict[str, Any]]
    round: list[dict[str, Any]]
    held_out: list[dict[str, Any]]
    shipped_overlaps: bool  # the shipped weights were trained on rows of the held-out part


def _nli() -> Split:
    with open(DATA / "nli" / "anli_r1_dev_annotated.csv", encoding="utf-8", newline="") as fh:
        rows = [
            {
                "premise": r["context"],
                "hypothesis": r["statement"].strip(),
                "label": NLI_LABELS[r["gold_label"].strip()],
            }
            for r in csv.DictReader(fh)
        ]
    premises = sorted({r["premise"] for r in rows})
    random.Random(SEED).shuffle(premises)
    cut1, cut2 = int(0.4 * len(premises)), int(0.8 * len(premises))
    side = {p: 0 if i < cut1 else 1 if i < cut2 else 2 for i, p in enumerate(premises)}
    parts: list[list[dict[str, Any]]] = [[], [], []]
    for r in rows:
        parts[side[r["premise"]]].append(r)
    return Split(parts[0], parts[1], parts[2], shipped_overlaps=True)


def _sentiment() -> Split:
    def read(name: str) -> list[dict[str, Any]]:
        with open(DATA / "sentiment" / name, encoding="utf-8") as fh:
            lines = fh.read().splitlines()[1:]
        out = []
        for line in lines:
            text, _, label = line.rpartition("\t")
            if text.strip() and label.strip() in ("0", "1") and len(text.strip()) >= 3:
                out.append(
                    {"statement": text.strip()[:500], "label": "positive" if label.strip() == "1" else "negative"}
                )
        return out

    train, dev = read("sst2_train.tsv"), read("sst2_dev.tsv")
    rng = random.Random(SEED)
    rng.shuffle(train)
    rng.shuffle(dev)
    half = len(dev) // 2
    return Split(train[:20000], dev[:half], dev[half:], shipped_overlaps=False)


def _hatespeech() -> Split:
    with open(DATA / "hatespeech" / "davidson_2017.csv", encoding="utf-8", newline="") as fh:
        rows = [
            {
                "statement": (r["tweet"] or "").strip()[:500],
                "label": "hateful" if r["class"].strip() == "0" else "not_hateful",
            }
            for r in csv.DictReader(fh)
        ]
    rows = [r for r in rows if len(r["statement"]) >= 3]
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_label[r["label"]].append(r)
    parts: list[list[dict[str, Any]]] = [[], [], []]
    rng = random.Random(SEED)
    for label in sorted(by_label):
        group = by_label[label]
        rng.shuffle(group)
        cut1, cut2 = int(0.6 * len(group)), int(0.8 * len(group))
        parts[0] += group[:cut1]
        parts[1] += group[cut1:cut2]
        parts[2] += group[cut2:]
    for part in parts:
        rng.shuffle(part)
    return Split(parts[0], parts[1], parts[2], shipped_overlaps=True)


SPLITS = {"nli": _nli, "sentiment": _sentiment, "hatespeech": _hatespeech}


def _write_base(task: str, rows: list[dict[str, Any]], folder: Path) -> None:
    """The base part in the format the task's recipe reads (its ``base_data``)."""
    folder.mkdir(parents=True)
    if task == "nli":
        with open(folder / "anli_r1_dev_annotated.csv", "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["context", "statement", "gold_label"])
            writer.writeheader()
            letters = {v: k for k, v in NLI_LABELS.items()}
            for r in rows:
                writer.writerow(
                    {"context": r["premise"], "statement": r["hypothesis"], "gold_label": letters[r["label"]]}
                )
    elif task == "sentiment":
        dev_size = max(200, len(rows) // 20)  # the recipe reports on a dev file: a slice of the base, not held out
        for name, part in (("sst2_dev.tsv", rows[:dev_size]), ("sst2_train.tsv", rows[dev_size:])):
            with open(folder / name, "w", encoding="utf-8") as fh:
                fh.write("sentence\tlabel\n")
                for r in part:
                    fh.write(f"{r['statement']}\t{1 if r['label'] == 'positive' else 0}\n")
    else:
        with open(folder / "davidson_2017.csv", "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["class", "tweet"])
            writer.writeheader()
            for r in rows:
                writer.writerow({"class": 0 if r["label"] == "hateful" else 2, "tweet": r["statement"]})


async def _task_figures(task_code: str, split: Split, round_rows: int, work: Path) -> list[Result]:
    from dynaforge.db.engine import Database
    from dynaforge.db.migrate import upgrade
    from dynaforge.inference.client import LocalInferenceClient
    from dynaforge.plugins import Plugins
    from dynaforge.services import auth as auth_service
    from dynaforge.services import examples as example_service
    from dynaforge.services import tasks as task_service
    from dynaforge.services import training as training_service
    from dynaforge.services import validation as validation_service
    from dynaforge.services.actor import Actor
    from dynaforge.services.platform import Platform
    from dynaforge.settings import Settings
    from dynaforge.tasks.base import ModelSpec
    from dynaforge.training.runner import JobRun

    started = time.perf_counter()
    base_root = work / "base"
    _write_base(task_code, split.base, base_root / task_code)
    url = f"sqlite+aiosqlite:///{work}/retrain.db"
    os.environ["DYNAFORGE_DATA_DIR"] = str(work / "data")  # where the models' loaders (this process) look
    settings = Settings(
        database_url=url,
        environment="test",
        data_dir=work / "data",
        training_data_dir=base_root,
        load_plugins=task_code,
        examples_per_minute=10**9,
        validations_per_minute=10**9,
        training_timeout_s=TIMEOUT_S,
    )
    db = Database(url)
    await upgrade(db)
    plugins = Plugins(allowlist={task_code})
    inference = LocalInferenceClient(plugins.registry.backends, timeout_s=600.0, load_timeout_s=600.0)
    p = Platform.create(settings, db=db, plugins=plugins, inference=inference)
    try:
        await task_service.sync_registered_tasks(p)
        task = plugins.registry.tasks[task_code]
        system = Actor.system()
        owner = await auth_service.create_user(
            p, system, username="owner", email="owner@example.org", password="correct horse battery", is_admin=True
        )
        writer = await auth_service.create_user(
            p, system, username="writer", email="writer@example.org", password="correct horse battery"
        )
        owner_actor = Actor(user_id=owner.id, username="owner", is_admin=True)
        writer_actor = Actor(user_id=writer.id, username="writer")

        # --- the round: written against the target, accepted by an owner
        replay = split.round[:round_rows]
        fooled_when_written: dict[str, bool] = {}
        for fields in replay:
            outcome = await example_service.submit(p, writer_actor, task_code=task_code, fields=fields)
            example = outcome.example
            fooled_when_written[_key(task, fields)] = bool(example.fooled)
            await validation_service.validate(p, owner_actor, example.id, "CORRECT")
        sets = await dataset_service.build_from_round(p, owner_actor, task_code, 1, seed=SEED, splits=ROUND_SPLITS)
        by_split = {d.split: d for d in sets if d.parent_id is None}
        test_rows = await _items(p, owner_actor, by_split["test"].id)

        # --- base (base part alone) and candidate (base part + the round's train set), by the same recipe
        async def trained(dataset_ids: list[int], hyperparameters: dict[str, Any] | None = None) -> Any:
            job = await training_service.train_candidate(
                p,
                owner_actor,
                task_code=task_code,
                dataset_ids=dataset_ids,
                include_base_data=True,
                seed=0,
                hyperparameters=hyperparameters,
            )
            await JobRun(p.settings, job.id, plugins=plugins).run()
            done = await training_service.get_job(p, owner_actor, job.id)
            if done.candidate_id is None:
                raise RuntimeError(f"{task_code}: training job failed: {done.error}\n{done.log_tail}")
            return await training_service.get_registered(p, owner_actor, done.candidate_id)

        base = await trained([], SHIPPED_RECIPE.get(task_code))
        candidate = await trained([by_split["train"].id])
        shipped = ModelSpec.from_dict(task.default_target_models[0].as_dict())
        models = {
            "base": ModelSpec(base.name, base.backend, dict(base.config)),
            "candidate": ModelSpec(candidate.name, candidate.backend, dict(candidate.config)),
            "shipped": shipped,
        }
        figures: dict[str, dict[str, float]] = {}
        rights: dict[str, dict[str, list[bool]]] = {}
        fooled_test = [r for r in test_rows if fooled_when_written.get(_key(task, r))]
        fooled_all = [r for r in replay if fooled_when_written.get(_key(task, r))]
        for name, spec in models.items():
            rights[name] = {
                "held": await _rights(p, task, spec, split.held_out),
                "test": await _rights(p, task, spec, test_rows),
            }
            still = await _fooled_share(p, task, spec, fooled_test)
            still_all = await _fooled_share(p, task, spec, fooled_all)
            figures[name] = {
                "held": _mean(rights[name]["held"]),
                "test": _mean(rights[name]["test"]),
                "still": still,
                "still_all": still_all,
            }
        seconds = time.perf_counter() - started
    finally:
        await p.close()
    written_fooled = sum(fooled_when_written.values())
    mark = "*" if split.shipped_overlaps else ""
    line = (
        f"{task_code}: held-out acc base {figures['base']['held']:.3f} -> candidate {figures['candidate']['held']:.3f}"
        f" (shipped {figures['shipped']['held']:.3f}{mark}, n={len(split.held_out)}); round-1 test acc base "
        f"{figures['base']['test']:.3f} -> candidate {figures['candidate']['test']:.3f} (n={len(test_rows)}); "
        f"still fooled, of the {len(fooled_test)} round-test examples that fooled the target: base "
        f"{figures['base']['still']:.3f}, candidate {figures['candidate']['still']:.3f}, shipped "
        f"{figures['shipped']['still']:.3f}; of all {written_fooled} round examples that fooled it (of "
        f"{len(replay)}; the candidate trained on the train split's): base {figures['base']['still_all']:.3f}, "
        f"candidate {figures['candidate']['still_all']:.3f}, shipped {figures['shipped']['still_all']:.3f}; "
        f"trained on {len(split.base)} base + "
        f"{by_split['train'].size} round examples; McNemar, candidate against: "
        + "; ".join(
            f"{other} on the {where} {_paired(rights['candidate'][key], rights[other][key])}"
            for other in ("shipped", "base")
            for key, where in (("test", "round test"), ("held", "held-out part"))
        )
        + f"; {seconds:.0f}s"
    )
    target = "informational (* the shipped weights saw the held-out rows)"
    return [Result(f"{ID}-{task_code}", line, target, True, info=True)]


def _key(task: Any, fields: dict[str, Any]) -> str:
    """An example's identity across the replay and the data sets: its context and input fields, stripped."""
    return "\x1f".join(str(fields.get(n, "")).strip() for n in task.field_names(Role.CONTEXT, Role.INPUT))


async def _items(p: Any, actor: Any, dataset_id: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        page = await dataset_service.items(p, actor, dataset_id, first=100, after=after)
        rows += [dict(item.fields) for item in page.items]
        if not page.listing.window.has_next:
            return rows
        after = page.listing.window.end_cursor


async def _predict(p: Any, task: Any, spec: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for start in range(0, len(rows), 64):
        batch = rows[start : start + 64]
        inputs = [task.build_model_input(*task.split_fields(r)) for r in batch]
        answer = await p.inference.predict(spec, inputs)
        for output in answer.outputs:
            try:
                out.append(task.read_model_output(output))
            except (TypeError, ValueError):
                out.append(None)
    return out


async def _rights(p: Any, task: Any, spec: Any, rows: list[dict[str, Any]]) -> list[bool]:
    """Whether the model gets each row's target right, row by row."""
    predictions = await _predict(p, task, spec, rows)
    target = task.field_names(Role.TARGET)
    pairs = zip(rows, predictions, strict=True)
    return [pred is not None and all(pred.get(n) == r.get(n) for n in target) for r, pred in pairs]


def _mean(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


def _paired(candidate: list[bool], other: list[bool]) -> str:
    """McNemar's exact test of the candidate against another model on the same items, as printed."""
    from dynaforge.evaluation.scoring import mcnemar

    test = mcnemar(candidate, other)
    return f"{test.only_first}:{test.only_second} (p={test.p_value:.3g}, n={len(candidate)})"


async def _fooled_share(p: Any, task: Any, spec: Any, rows: list[dict[str, Any]]) -> float:
    if not rows:
        return float("nan")
    predictions = await _predict(p, task, spec, rows)
    fooled = 0
    for r, pred in zip(rows, predictions, strict=True):
        context, example = task.split_fields(r)
        fooled += pred is None or bool(task.is_fooled(example, pred, context))
    return fooled / len(rows)


def _have_data() -> bool:
    return DATA.is_dir()


async def run(ctx: Context) -> list[Result]:
    wanted = [t.strip() for t in os.environ.get("BENCH_RETRAIN_TASKS", "nli,sentiment,hatespeech").split(",") if t]
    round_rows = int(os.environ.get("BENCH_RETRAIN_ROUND", "600"))
    if not _have_data():
        return [Result(ID, f"could not be measured: no shared data at {DATA} (set BENCH_DATA)", "informational", False)]
    results: list[Result] = []
    for task_code in wanted:
        split = SPLITS[task_code]()
        with tempfile.TemporaryDirectory(prefix=f"bench-retrain-{task_code}-") as tmp:
            try:
                results += await _task_figures(task_code, split, round_rows, Path(tmp))
            except Exception as exc:  # report and go on with the next task
                traceback.print_exc(file=sys.stderr)
                results.append(Result(f"{ID}-{task_code}", f"could not be measured: {exc}", "informational", False))
    return results


def main() -> int:
    """``python -m bench.retrain``: the figures without the benchmark server (which RETRAIN does not use)."""
    results = asyncio.run(run(None))  # type: ignore[arg-type]
    for result in results:
        print(result.line(), flush=True)
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
