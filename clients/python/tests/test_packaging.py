"""The client is a light distribution: nothing of the server, no torch, and importing it loads neither."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path


def test_requirements_are_light():
    required = importlib.metadata.requires("dynaforge-client") or []
    core = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in required if "extra ==" not in r}
    assert core == {"httpx", "pydantic", "websockets", "tqdm"}


def test_this_virtualenv_has_only_the_client():
    for name in ("dynaforge", "torch", "transformers", "strawberry", "sqlalchemy"):
        assert importlib.util.find_spec(name) is None, f"{name} is installed beside the client"


def test_importing_the_client_loads_no_heavy_module():
    code = (
        "import sys, dynaforge_client; "
        "print(sorted(m for m in ('pandas', 'datasets', 'torch', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # pandas and datasets only when to_pandas() or export() asks for them


def test_the_typed_layer_ships_with_it():
    from dynaforge_client._generated import GeneratedClient

    assert hasattr(GeneratedClient, "model_fooled") and hasattr(GeneratedClient, "upload_model")
    spec = importlib.util.find_spec("dynaforge_client")
    assert spec is not None and spec.submodule_search_locations


def test_the_blocking_clients_typed_surface_is_current():
    """Client's declared methods (for type checkers and IDEs) are derived from AsyncClient's."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "sync_surface.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_blocking_client_has_every_method():
    from dynaforge_client import AsyncClient, Client

    public = {n for n in dir(AsyncClient) if not n.startswith("_") and callable(getattr(AsyncClient, n))}
    with Client("http://127.0.0.1:9") as client:  # nothing is sent
        assert public - {"aclose"} <= set(dir(client))
        assert callable(client.create_example) and client.create_example.__doc__ == AsyncClient.create_example.__doc__


def test_the_wheel_holds_the_whole_client(tmp_path):
    """Built as pip builds it for a user (``pip install ./clients/python``): the generated layer, the typing marker
    and the command are in the wheel; the tests, operations and scripts are not."""
    import zipfile

    root = Path(__file__).resolve().parents[1]
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("dynaforge_client-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    generated = {p.name for p in (root / "src" / "dynaforge_client" / "_generated").glob("*.py")}
    assert {f"dynaforge_client/_generated/{name}" for name in generated} <= names
    assert {"dynaforge_client/py.typed", "dynaforge_client/cli.py", "dynaforge_client/sync.py"} <= names
    assert not [n for n in names if n.startswith(("tests/", "operations/", "scripts/"))]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "dynaforge-client = dynaforge_client.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


SCRIPT = """
from dynaforge_client import Client
from dynaforge_client.types import LeaderboardRow, ProgressEvent


def best(client: Client) -> LeaderboardRow:
    return client.leaderboard("nli").rows[0]


def score(client: Client) -> float | None:
    return best(client).{field}


def progress(client: Client) -> None:
    def told(event: ProgressEvent) -> None:
        print(event.{event_field})

    client.wait_for_results("TW9kZWw6MQ", on_progress=told)
"""


def _strict(tmp_path: Path, **fields: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(**fields))
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache")]
    src = Path(__file__).resolve().parents[1] / "src"
    env = {"MYPYPATH": str(src), "PATH": "/usr/bin:/bin"}
    return subprocess.run([*command, str(script)], capture_output=True, text=True, env=env, timeout=300)


def test_mypy_strict_catches_a_field_a_result_does_not_have(tmp_path):
    """The results are typed down to their fields: a script reading a leaderboard row's or a progress event's field
    passes ``mypy --strict``; a misspelt one fails it, naming the field."""
    good = _strict(tmp_path, field="dynascore", event_field="status")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _strict(tmp_path, field="dynascroe", event_field="stauts")
    assert bad.returncode == 1, bad.stdout
    assert '"LeaderboardTaskLeaderboardRows" has no attribute "dynascroe"' in bad.stdout
    assert 'has no attribute "stauts"' in bad.stdout
