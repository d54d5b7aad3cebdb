"""The core's model backends: one module each, each a default plugin registering its backend, none of them importing
a heavy library (torch, transformers, httpx) until a model loads."""

from __future__ import annotations

import json
import subprocess
import sys

from dynaforge.defaults import backends
from dynaforge.plugins import DEFAULT_PLUGINS, Plugins


def test_each_backend_module_is_a_default_plugin_that_registers_its_backend():
    assert set(backends.MODULES) <= set(DEFAULT_PLUGINS)
    p = Plugins(allowlist=set())
    owners = {name: p.registry.owners[("backends", name)] for name in ("python", "transformers", "http")}
    assert owners == {
        "python": "dynaforge.defaults.backends.python",
        "transformers": "dynaforge.defaults.backends.transformers",
        "http": "dynaforge.defaults.backends.http",
    }
    rows = {r.name: r for r in p.info()}
    assert all(rows[m].is_default and rows[m].hooks == ("register_model_backends",) for m in backends.MODULES)
    # The names code imported from the single module before keep working.
    assert backends.HttpBackend is type(p.registry.backends["http"])
    assert backends.TransformersBackend is type(p.registry.backends["transformers"])


def test_registering_the_backends_imports_no_heavy_library():
    """The model worker and every evaluation job start by loading the plugins: they must stay quick to start."""
    code = (
        "import sys, json; from dynaforge.plugins import Plugins; Plugins(allowlist=set()); "
        "print(json.dumps([m for m in ('torch', 'transformers', 'httpx') if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
