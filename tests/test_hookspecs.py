"""Meta-tests of the hook specifications: every hook has a docstring, is documented with its exact signature in
docs/plugins.md, and has at least one test named after it."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from dynaforge import hookspecs

ROOT = Path(__file__).resolve().parent.parent
PLUGINS_DOC = ROOT / "docs" / "plugins.md"
TESTS_DIR = Path(__file__).resolve().parent
SPEC_MARKER = "dynaforge_spec"  # the attribute pluggy's HookspecMarker("dynaforge") sets


def hook_specs() -> dict[str, object]:
    return {name: obj for name, obj in vars(hookspecs).items() if inspect.isfunction(obj) and hasattr(obj, SPEC_MARKER)}


HOOKS = sorted(hook_specs())


def expected_signature(name: str) -> str:
    """``def name(param: annotation, ...)`` with annotations exactly as written in hookspecs.py.

    hookspecs.py uses ``from __future__ import annotations``, so every annotation is the source text as a string.
    """
    params = []
    for param in inspect.signature(hook_specs()[name]).parameters.values():
        text = param.name
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            text = "*" + text
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            text = "**" + text
        if param.annotation is not inspect.Parameter.empty:
            annotation = param.annotation
            text += ": " + (annotation if isinstance(annotation, str) else inspect.formatannotation(annotation))
        if param.default is not inspect.Parameter.empty:
            text += " = " + repr(param.default)
        params.append(text)
    return f"def {name}({', '.join(params)})"


def doc_sections(text: str) -> dict[str, str]:
    """Map each ``### heading`` of the document to its body, up to the next heading of any level."""
    sections: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if heading:
            current = heading.group(2).strip("` ") if heading.group(1) == "###" else None
            if current is not None:
                sections.setdefault(current, "")
            continue
        if current is not None:
            sections[current] += line + "\n"
    return sections


def collected_test_names() -> set[str]:
    """Names of every test function (module level or in a class, sync or async) in tests/*.py."""
    names: set[str] = set()
    for path in sorted(TESTS_DIR.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError:  # a broken test module fails in its own collection; do not hide it behind this one
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(node.name)
    return names


def test_hookspecs_are_found():
    # Guards the tests below against a change of marker name that would make them vacuous.
    assert {"register_tasks", "example_created", "model_fooled"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_docstring(hook):
    doc = inspect.getdoc(hook_specs()[hook])
    assert doc and doc.strip(), f"hook {hook} in dynaforge/hookspecs.py has no docstring"


def test_expected_signature_renders_source_annotations():
    assert expected_signature("register_tasks") == "def register_tasks(register: Callable[[Task], None])"
    assert expected_signature("example_created") == "def example_created(example: dict[str, Any])"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented_with_exact_signature(hook):
    sections = doc_sections(PLUGINS_DOC.read_text(encoding="utf-8"))
    assert hook in sections, f"docs/plugins.md has no '### {hook}' section"
    signature = expected_signature(hook)
    assert signature in sections[hook], (
        f"the '### {hook}' section of docs/plugins.md does not show the exact signature {signature!r}"
    )


def test_documented_hooks_exist():
    """Every section of the hook reference names a real hook (a renamed hook must not leave a stale section)."""
    text = PLUGINS_DOC.read_text(encoding="utf-8")
    reference = text.split("## Hook reference", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^### (\w+)\s*$", reference, flags=re.MULTILINE)
    stale = [name for name in documented if re.fullmatch(r"[a-z_]+", name) and name not in HOOKS]
    assert not stale, f"docs/plugins.md documents hooks that hookspecs.py does not declare: {stale}"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook):
    names = collected_test_names()
    matching = sorted(n for n in names if hook in n)
    assert matching, f"hook {hook} has no test: add a test whose name contains {hook!r} in tests/"
