"""The plugin-author guide (docs/plugins.md) states facts of the code: how many hooks, which core metrics,
perturbations and default plugins, which conformance checks and what `dynaforge check` prints, the smallest slice
group a gap is drawn from. Each is checked here against the code, so the guide cannot drift from it."""

from __future__ import annotations

import re
from pathlib import Path

from dynaforge import hookspecs
from dynaforge.conformance import CHECKS
from dynaforge.defaults.perturbations import DEFAULT_PERTURBATIONS
from dynaforge.evaluation.scoring import DEFAULT_MIN_GROUP_SIZE
from dynaforge.plugins import DEFAULT_PLUGINS, Plugins

GUIDE = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
WORDS = dict(enumerate(NUMBERS))


def _section(heading: str) -> str:
    start = GUIDE.index(heading)
    following = re.search(r"^#{2,3} ", GUIDE[start + len(heading) :], re.M)
    return GUIDE[start : start + len(heading) + (following.start() if following else len(GUIDE))]


def test_the_guide_counts_the_hooks():
    hooks = [name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "dynaforge_spec")]
    registration = [h for h in hooks if h.startswith("register_")]
    events = [h for h in hooks if not h.startswith("register_")]
    assert f"The {WORDS[len(registration)]} `register_*` hooks receive a `register` callback" in GUIDE
    assert f"The {WORDS[len(events)]} event hooks run after the change" in GUIDE


def test_the_guide_lists_the_core_perturbations_and_metrics():
    table = re.findall(r"^  \| `([a-z_]+)`(?:, `([a-z_]+)`)? \| (robustness|fairness) \|", GUIDE, re.M)
    in_table = [name for row in table for name in row[:2] if name]
    assert in_table == [p.name for p in DEFAULT_PERTURBATIONS]
    reference = _section("### register_perturbations")
    listed = re.search(r"The core registers (.*?) \(the table", " ".join(reference.split()))
    assert listed is not None
    assert re.findall(r"`([a-z_]+)`", listed.group(1)) == [p.name for p in DEFAULT_PERTURBATIONS]
    core = Plugins(allowlist=set())
    metrics = " ".join(_section("### register_metrics").split())
    named = re.search(r"The core registers (.*?)\.", metrics)
    assert named is not None and sorted(re.findall(r"`([a-z_0-9]+)`", named.group(1))) == sorted(core.registry.metrics)


def test_the_guide_lists_the_default_plugins():
    loading = " ".join(_section("### Loading order").split())
    first = loading[loading.index("1. ") : loading.index("2. ")]
    named = set(re.findall(r"`(dynaforge\.defaults\.[a-z_.]+)`", first))
    named |= {f"dynaforge.defaults.backends.{b}" for b in re.findall(r"`\.([a-z]+)`", first)}
    assert named == set(DEFAULT_PLUGINS)


def test_the_guide_shows_every_conformance_check():
    rows = re.findall(r"^\| `([a-z-]+)` \| ", _section("### The conformance kit"), re.M)
    assert rows == [c.name for c in CHECKS]
    output = GUIDE[GUIDE.index("dynaforge check formality\n```\n\n```text\n") :].split("```text\n", 1)[1]
    lines = output[: output.index("```")].splitlines()
    assert [line.split()[2] for line in lines[:-1]] == [c.name for c in CHECKS]
    assert lines[-1] == f"{len(CHECKS) - 2} passed, 0 failed, 2 skipped: {len(CHECKS)} checks on 1 task"
    assert f"runs one check (one of the {WORDS[len(CHECKS)]} below)" in " ".join(GUIDE.split())


def test_the_guide_gives_the_smallest_group_a_gap_is_drawn_from():
    assert f"Only groups of at least {DEFAULT_MIN_GROUP_SIZE} examples (`DEFAULT_MIN_GROUP_SIZE`" in " ".join(
        GUIDE.split()
    )
