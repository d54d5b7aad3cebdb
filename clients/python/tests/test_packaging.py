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
