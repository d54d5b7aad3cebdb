"""The built wheel is complete: installed alone into a fresh virtual environment, ``dynaforge db upgrade`` migrates a
database from the migrations mapped into the package at build time (they live in the top-level ``migrations/``).

The wheel is built offline from a copy of the distribution's files (no build isolation, no index), so a stale
``build/`` folder in the checkout cannot leak into it. The fresh environment sees the test environment's installed
dependencies through a ``.pth`` line (whose own ``.pth`` files, the editable installs among them, are not run), so
nothing is downloaded and the ``dynaforge`` under test is the wheel's.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from sqlmodel import SQLModel

import dynaforge.db.models  # noqa: F401  (the tables the migrations must create)
from dynaforge.db.migrate import head_revision

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION_FILES = ("pyproject.toml", "README.md", "server", "migrations")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in DISTRIBUTION_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", out, "."],
        cwd=source,
    )
    (built,) = out.glob("dynaforge-*.whl")
    return built


def test_the_wheel_holds_the_migrations_and_the_typing_marker(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "dynaforge/py.typed" in names
    assert {"dynaforge/migrations/__init__.py", "dynaforge/migrations/env.py"} <= names
    assert "dynaforge/migrations/script.py.mako" in names  # `alembic revision` needs it
    versions = {p.name for p in (ROOT / "migrations" / "versions").glob("*.py")}
    assert versions and {f"dynaforge/migrations/versions/{v}" for v in versions} <= names
    assert not any(n.startswith(("migrations/", "server/")) for n in names), "source folders leaked into the wheel"


def test_db_upgrade_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site_packages = Path(_run([str(python), "-c", purelib], cwd=tmp_path).strip())
    # The test environment's dependencies, appended after the fresh environment's own site-packages.
    (site_packages / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        cwd=tmp_path,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAFORGE_", "PYTHON"))}

    probe = (
        "import sys, dynaforge, dynaforge.db.migrate as m; "
        "print(dynaforge.__file__); print(m.migrations_dir()); "
        "print(sorted(n for n in sys.modules if n.startswith('__editable__'))); print(*sys.path, sep='\\n')"
    )
    package, migrations, editable, *search_path = _run([str(python), "-c", probe], cwd=tmp_path, env=env).splitlines()
    assert Path(package).is_relative_to(site_packages), f"dynaforge imported from {package}, not from the wheel"
    assert Path(migrations) == site_packages / "dynaforge" / "migrations"
    assert (Path(migrations) / "script.py.mako").is_file()
    assert editable == "[]", f"an editable install's import hook ran: {editable}"
    shadows = [p for p in search_path if p and Path(p, "dynaforge").exists() and Path(p) != site_packages]
    assert not shadows, f"another dynaforge is on the search path: {shadows}"
    assert not {str(ROOT), str(ROOT / "server"), str(ROOT / "migrations")} & set(search_path)

    database = tmp_path / "x.db"
    out = _run(
        [str(venv / "bin" / "dynaforge"), "db", "upgrade", "--database-url", f"sqlite+aiosqlite:///{database}"],
        cwd=tmp_path,
        env=env,
    )
    assert f"database at revision {head_revision()}" in out
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        (version,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert version == head_revision()
    assert set(SQLModel.metadata.tables) <= tables
