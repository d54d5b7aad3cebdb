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
