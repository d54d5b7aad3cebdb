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
