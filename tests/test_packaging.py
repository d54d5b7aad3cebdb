"""The distribution's layout: every package under ``server/`` is listed in ``pyproject.toml`` (the list is explicit
because ``migrations/`` is a second source root), and the developers' ``alembic.ini`` points at the migrations the
server runs. The built wheel itself is checked in ``test_wheel.py``."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

import pytest

import dynaforge
from dynaforge.db.migrate import migrations_dir

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_under_server_is_in_the_distribution() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    on_disk = {
        ".".join(init.parent.relative_to(ROOT / "server").parts) for init in (ROOT / "server").rglob("__init__.py")
    }
    listed = set(config["packages"])
    assert on_disk - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"
    assert config["package-dir"]["dynaforge.migrations"] == "migrations"
    # the top-level migrations/ folder is mapped in, its revisions a package of their own
    assert listed - on_disk == {"dynaforge.migrations", "dynaforge.migrations.versions"}


def test_the_migrations_come_from_the_top_level_folder() -> None:
    if not Path(dynaforge.__file__).resolve().is_relative_to(ROOT):
        pytest.skip("dynaforge is not installed from this checkout (pip install -e .)")
    assert migrations_dir() == ROOT / "migrations"
    ini = configparser.ConfigParser()
    ini.read(ROOT / "alembic.ini")
    assert (ROOT / ini["alembic"]["script_location"]).resolve() == migrations_dir()
