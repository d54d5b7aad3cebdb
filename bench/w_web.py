"""W1-W3: the web app's speed, measured in headless Chromium against a ``dynaforge demo`` of its own.

The figures come from ``web/bench/web.bench.ts`` (Playwright with ``web/playwright.bench.config.ts``: Debian's
Chromium, the built app, the demo started on a free port); this module runs it and prints its three lines:

* **W1** JavaScript + CSS transferred (gzip) for the first load of an annotate page: ≤ 150 KB;
* **W2** navigation to an interactive annotate form on loopback, median of fresh browser contexts: ≤ 1.0 s;
* **W3** from clicking Submit to the verdict shown, against the same ``createExample`` sent by a plain HTTP client
  in the same run (medians): ≤ the plain client's round trip + 50 ms.

It needs Node and the built app (``make setup``); without them it says so and fails, as any target that could not be
measured.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

from bench.common import Context, Result

ID = "WEB"
TIMEOUT_S = 600.0
WEB = Path(__file__).resolve().parent.parent / "web"
LINE = re.compile(r"^(W[123]) (.*) \| target: (.*) \| (PASS|FAIL)$")


async def run(ctx: Context) -> list[Result]:
    npx = shutil.which("npx")
    if npx is None or not (WEB / "dist" / "index.html").is_file() or not (WEB / "node_modules").is_dir():
        return [Result(ID, "could not be measured (needs Node and the built web app: make setup)", "W1-W3", False)]
    process = await asyncio.create_subprocess_exec(
        npx,
        "playwright",
        "test",
        "-c",
        "playwright.bench.config.ts",
        cwd=WEB,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    text = output.decode(errors="replace")
    results = [
        Result(m.group(1), m.group(2), m.group(3), m.group(4) == "PASS")
        for line in text.splitlines()
        if (m := LINE.match(line.strip()))
    ]
    if process.returncode != 0 or len(results) != 3:
        tail = " / ".join(text.strip().splitlines()[-5:])
        results.append(Result(ID, f"the browser run ended with {process.returncode} ({tail[-300:]})", "W1-W3", False))
    return results
