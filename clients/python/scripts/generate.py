"""Regenerate the typed layer (src/dynaforge_client/_generated) from the server's schema.graphql and the client's
operations (operations/*.graphql) with ariadne-codegen, or check that the checked-in code matches.

    python scripts/generate.py          write it
    python scripts/generate.py --check  exit 1, listing the differences, when the checked-in code is stale

Run with the codegen virtualenv (``make client-generate`` and ``make client-check`` make it from
codegen-requirements.txt).
"""

from __future__ import annotations

import argparse
import difflib
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "dynaforge_client" / "_generated"


def generate(into: Path) -> Path:
    """Run ariadne-codegen with the pyproject's settings, writing the package under ``into``; returns its folder."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ariadne-codegen"]
    lines = ["[tool.ariadne-codegen]"]
    for key, value in settings.items():
        if isinstance(value, dict):
            continue
        if key == "schema_path":
            value = str((ROOT / value).resolve())
        elif key == "queries_path":
            value = str(ROOT / value)
        elif key == "target_package_path":
            value = str(into)
        lines.append(f"{key} = {value!r}" if isinstance(value, str) else f"{key} = {str(value).lower()}")
    for scalar, data in settings.get("scalars", {}).items():
        lines.append(f"[tool.ariadne-codegen.scalars.{scalar}]")
        lines.extend(f"{k} = {v!r}" for k, v in data.items())
    config = into / "codegen.toml"
    config.write_text("\n".join(lines) + "\n")
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "ariadne-codegen"), "client", "--config", str(config)], check=True,
                   capture_output=True, text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})  # fmt: skip
    return into / settings["target_package_name"]


def differences(fresh: Path, current: Path) -> list[str]:
    """Unified diffs (and missing or extra files) between the fresh package and the checked-in one."""
    out = []
    fresh_files = {p.relative_to(fresh) for p in fresh.rglob("*.py")}
    current_files = {p.relative_to(current) for p in current.rglob("*.py")} if current.exists() else set()
    for name in sorted(fresh_files | current_files):
        a, b = current / name, fresh / name
        if not a.exists() or not b.exists():
            out.append(f"{name}: {'missing from' if not a.exists() else 'no longer generated, still in'} the package")
        elif not filecmp.cmp(a, b, shallow=False):
            out.extend(difflib.unified_diff(a.read_text().splitlines(), b.read_text().splitlines(),
                                            f"checked-in/{name}", f"generated/{name}", lineterm="", n=1))  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in code instead of writing it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            fresh = generate(Path(tmp))
        except subprocess.CalledProcessError as exc:
            print(f"ariadne-codegen failed:\n{exc.stdout}\n{exc.stderr}", file=sys.stderr)
            return 2
        if args.check:
            diff = differences(fresh, PACKAGE)
            if diff:
                print("\n".join(diff[:200]))
                print(
                    "\nThe generated client does not match schema.graphql and operations/: run `make client-generate` "
                    "and commit the result.",
                    file=sys.stderr,
                )
                return 1
            print("the generated client matches schema.graphql and operations/")
            return 0
        shutil.rmtree(PACKAGE, ignore_errors=True)
        shutil.copytree(fresh, PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        print(f"wrote {PACKAGE.relative_to(ROOT)}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
