"""Write (or check) the typed declarations of the blocking ``Client`` in src/dynaforge_client/sync.py.

``Client`` runs :class:`AsyncClient`'s methods on a loop of its own through ``__getattr__``; type checkers and IDEs
see its methods through the block between the ``surface:`` markers in sync.py, which this script derives from
client.py: each ``async def`` becomes a ``def`` with the same arguments and result, and a method returning an
``EventStream[T]`` returns a ``SyncEventStream[T]`` (an ``AsyncIterator[T]``, a ``SyncIterator[T]``).

    python scripts/sync_surface.py          rewrite the block
    python scripts/sync_surface.py --check  exit 1 when it is stale (tests/test_packaging.py runs this)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "src" / "dynaforge_client" / "client.py"
SYNC = ROOT / "src" / "dynaforge_client" / "sync.py"
BEGIN = "    # surface: begin (written by scripts/sync_surface.py from AsyncClient; do not edit)\n"
END = "    # surface: end\n"
IMPORTS_BEGIN = "# surface imports: begin (written by scripts/sync_surface.py; do not edit)\n"
IMPORTS_END = "# surface imports: end\n"
SKIP = {"aclose", "__aenter__", "__aexit__", "__init__"}


def _parameters(args: ast.arguments) -> list[str]:
    """Each parameter as source (``name: type = default``), with ``*`` before keyword-only ones."""

    def one(arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg + (f": {ast.unparse(arg.annotation)}" if arg.annotation else "")
        if default is not None:
            text += f" = {ast.unparse(default)}" if arg.annotation else f"={ast.unparse(default)}"
        return text

    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [one(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.vararg:
        out.append("*" + one(args.vararg, None))
    elif args.kwonlyargs:
        out.append("*")
    out.extend(one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True))
    if args.kwarg:
        out.append("**" + one(args.kwarg, None))
    return out


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    returns = ast.unparse(node.returns) if node.returns else "None"
    returns = re.sub(r"^EventStream\[", "SyncEventStream[", returns)
    returns = re.sub(r"^Async(Iterator|Generator)\[(.*?)(, None)?\]$", r"SyncIterator[\2]", returns)
    parameters = _parameters(node.args)
    line = f"        def {node.name}({', '.join(parameters)}) -> {returns}: ..."
    if len(line) <= 120:
        return line
    inner = "".join(f"            {p},\n" for p in parameters)
    return f"        def {node.name}(\n{inner}        ) -> {returns}: ..."


def _import(module: str, names: list[str]) -> str:
    line = f"    from {module} import {', '.join(names)}"
    if len(line) <= 120:
        return line
    inner = "".join(f"        {n},\n" for n in names)
    return f"    from {module} import (\n{inner}    )"


def surface() -> tuple[str, str]:
    """The import block (module level) and the methods block (in the class)."""
    tree = ast.parse(CLIENT.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AsyncClient")
    methods = [
        n
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and not n.name.startswith("_")
        and n.name not in SKIP
        and not any(isinstance(d, ast.Name) and d.id in ("property",) for d in n.decorator_list)
        and not any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in n.decorator_list)
    ]
    lines = "\n".join(_signature(n) for n in methods).splitlines()
    used = {name.id for n in methods for name in ast.walk(n.args) if isinstance(name, ast.Name)}
    used |= {name.id for n in methods if n.returns for name in ast.walk(n.returns) if isinstance(name, ast.Name)}
    standard, local = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            # EventStream becomes SyncEventStream, and sync.py imports Any itself
            skip = ("EventStream", "AsyncIterator", "AsyncGenerator", "Any")
            names = sorted(a.name for a in node.names if a.name in used and a.name not in skip)
            if names:
                (local if node.level else standard).append((f"{'.' * node.level}{node.module}", names))
    if "Progress" in used:
        local.append((".client", ["Progress"]))
    imports = [_import(m, n) for m, n in sorted(standard)] + [""] + [_import(m, n) for m, n in sorted(local)]
    import_block = IMPORTS_BEGIN + "if TYPE_CHECKING:\n" + "\n".join(imports) + "\n" + IMPORTS_END
    head = ["    if TYPE_CHECKING:  # the methods Client forwards to AsyncClient, blocking"]
    methods = BEGIN + "    # fmt: off\n" + "\n".join(head + lines) + "\n    # fmt: on\n" + END
    return import_block, methods


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = SYNC.read_text()
    import_block, methods = surface()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    fresh = text[:start] + methods + text[end:]
    start, end = fresh.index(IMPORTS_BEGIN), fresh.index(IMPORTS_END) + len(IMPORTS_END)
    fresh = fresh[:start] + import_block + fresh[end:]
    if args.check:
        if fresh != text:
            print("sync.py's Client surface is stale: run python scripts/sync_surface.py", file=sys.stderr)
            return 1
        return 0
    SYNC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
