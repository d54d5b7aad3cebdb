"""Architecture boundaries that must hold as the code grows."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "server" / "dynaforge"
TASK_WORDS = re.compile(r"hypothesis|premise|sentiment|hatespeech|hate_speech|squad", re.IGNORECASE)


def test_server_names_no_task():
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "server").rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if TASK_WORDS.search(line)
    ]
    assert offenders == [], "the core must stay task-agnostic; move these into a plugin: " + ", ".join(offenders)


def test_api_process_does_not_import_torch_at_start_up():
    code = (
        "import sys\n"
        "from dynaforge.app import create_app\n"
        "from dynaforge.settings import Settings\n"
        "app = create_app(Settings(database_url='sqlite+aiosqlite:///:memory:'))\n"
        "assert app.state.platform.plugins.registry.tasks, 'no task plugin loaded'\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "torch" not in result.stdout and "transformers" not in result.stdout, result.stdout


def test_api_holds_no_sql_and_no_limits():
    """api/ translates GraphQL and HTTP to service calls and back: no SQL, no database session, no rate limiter
    (the rules and limits live in services/, where the CLI and jobs obey them too)."""
    offenders = []
    for path in sorted((PACKAGE / "api").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                offenders += [f"{where} imports {m}" for m in modules if m.split(".")[0] in ("sqlalchemy", "sqlmodel")]
            elif isinstance(node, ast.Attribute) and node.attr in ("db", "limiter"):
                offenders.append(f"{where} uses .{node.attr}")
    assert offenders == [], "move these into a service: " + ", ".join(offenders)


#: Function-level imports of one service module by another that remain on purpose, as (file, module): none since
#: the after-commit announcer (``services/announce.py``) replaced the tasks -> webhooks fan-out.
LAZY_SERVICE_IMPORTS: set[tuple[str, str]] = set()


def _function_level_imports(path: Path) -> set[tuple[int, str]]:
    """(line, module) of each import made inside a function of ``path`` (``from a import b`` gives ``a.b`` when b
    is a module of package a)."""
    found = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found |= {(node.lineno, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    is_module = (PACKAGE.parent / node.module.replace(".", "/") / f"{alias.name}.py").exists()
                    found.add((node.lineno, f"{node.module}.{alias.name}" if is_module else node.module))
    return found


def test_no_lazy_imports_between_service_modules():
    """A service imports the services it builds on at the top of its module. An import inside a function hides an
    import cycle: move the piece both need into a module that both import (as ``evaluation_jobs`` and the
    ``ContextStrategy`` of ``tasks`` were). api/ never reaches back into the app or the API's own modules."""
    offenders = []
    for path in sorted((PACKAGE / "services").glob("*.py")):
        where = str(path.relative_to(PACKAGE))
        offenders += [
            f"{where}:{line} imports {module}"
            for line, module in sorted(_function_level_imports(path))
            if module.startswith("dynaforge.services") and (where, module) not in LAZY_SERVICE_IMPORTS
        ]
    for path in sorted((PACKAGE / "api").rglob("*.py")):
        offenders += [
            f"{path.relative_to(PACKAGE)}:{line} imports {module}"
            for line, module in sorted(_function_level_imports(path))
            if module == "dynaforge.app" or module.startswith("dynaforge.api")
        ]
    assert offenders == [], "import these at the top of the module, without a cycle: " + ", ".join(offenders)


def test_each_service_module_imports_on_its_own():
    """Every service module (and the app) imports first in a fresh interpreter: no import cycle that works only
    when another module happened to be imported before. One process per module, forked (all at once) after the
    third-party libraries and the layers below services (tables, plugins, settings) are loaded."""
    modules = [f"dynaforge.services.{p.stem}" for p in sorted((PACKAGE / "services").glob("*.py"))]
    modules += ["dynaforge.api.export_http", "dynaforge.app"]
    code = (
        "import importlib, os, sys, traceback\n"
        "import graphql, pydantic, sqlalchemy, sqlmodel, starlette, strawberry  # shared by every child,\n"
        "import dynaforge.db.models, dynaforge.plugins, dynaforge.settings  # as are the layers below services\n"
        "children = {}\n"
        "for name in sys.argv[1:]:\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "        except BaseException:\n"
        "            traceback.print_exc()\n"
        "            os._exit(1)\n"
        "        os._exit(0)\n"
        "    children[pid] = name\n"
        "print(' '.join(name for pid, name in children.items() if os.waitpid(pid, 0)[1] != 0))\n"
    )
    result = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"cannot be imported first: {result.stdout.strip()}\n{result.stderr}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Each module of ``server/dynaforge`` and the modules of the package it imports: at the top, inside functions
    and under ``TYPE_CHECKING`` alike (a lazy or type-only import is a circle all the same, only hidden)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {known(a.name) for a in node.names if a.name.startswith("dynaforge.")}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                if base.startswith("dynaforge"):
                    targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else known(base) for a in node.names}
        graph[module] = {t for t in targets if t and t != module}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one member (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_cycle_between_modules():
    """No module of the server reaches itself through its imports, lazy and type-only ones included: a circle makes
    the import order matter and two modules one. Move what both need into a module below both (as ``manifests``,
    ``tasks.outputs`` and ``services.task_loading`` were)."""
    assert _circles(_import_graph()) == []


#: The application's layers, each a package: none of them may sit on a circle of packages (the contract below them,
#: tasks, inference, defaults and the plugin machinery, is one layer and may import within itself).
LAYERS = ("api", "services", "evaluation", "training", "db")


def test_application_layers_import_downwards():
    """``api`` → ``services`` → ``evaluation`` / ``training`` → the plugin contract → ``db`` never back: pure scoring
    (``evaluation``) knows no service, the services no API."""
    by_package: dict[str, set[str]] = {}
    for module, targets in _import_graph().items():
        top = ".".join(module.split(".")[:2])
        by_package.setdefault(top, set()).update(".".join(t.split(".")[:2]) for t in targets)
    for top, targets in by_package.items():
        targets.discard(top)
    layered = [c for c in _circles(by_package) if any(f"dynaforge.{layer}" in c for layer in LAYERS)]
    assert layered == [], f"packages importing each other: {layered}"


def test_plugin_contract_holds_no_storage():
    """What plugin authors build on (tasks, model backends, adversaries, the defaults, the hooks) knows no database:
    a declared task is loaded from storage by a service (``services.task_loading``)."""
    contract = [*(PACKAGE / d for d in ("tasks", "inference", "adversaries", "defaults"))]
    paths = [p for d in contract for p in d.rglob("*.py")]
    paths += [PACKAGE / f for f in ("hookspecs.py", "plugins.py", "exporters.py", "importers.py", "conformance.py")]
    graph = _import_graph()
    offenders = []
    for path in sorted(paths):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= graph[_module_name(path)]
        offenders += [
            f"{path.relative_to(ROOT)} imports {m}"
            for m in sorted(imported)
            if m.split(".")[0] in ("sqlalchemy", "sqlmodel") or m.startswith(("dynaforge.db", "dynaforge.services"))
        ]
    assert offenders == [], offenders
