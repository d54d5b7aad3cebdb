"""Can a confined model process use the GPU? ``python bench/gpu_confinement.py`` (on a machine with CUDA and torch).

An evaluation runs the model in a process that limits itself (:func:`dynaforge.evaluation.predictor.confine`):
address space or data size, CPU seconds, open files, and for models that need no network a user and network
namespace. CUDA reserves tens of gigabytes of *address space* at initialisation (mappings with no memory behind
them), so an address-space limit that is generous for a CPU model may stop a GPU model before its first tensor. This
script runs the same forward pass (a randomly initialised BERT-base-sized encoder, batch 32 x 128 tokens, fp16 on the
GPU) in a child process under each confinement and prints what happened and how long a pass took. It needs only
torch and transformers: the predictor module is loaded from its file, without the rest of the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

PREDICTOR = Path(__file__).resolve().parent.parent / "server" / "dynaforge" / "evaluation" / "predictor.py"

CHILD = r"""
import importlib.util, json, resource, sys, time
spec = importlib.util.spec_from_file_location("predictor", sys.argv[1])
predictor = importlib.util.module_from_spec(spec); sys.modules["predictor"] = predictor
spec.loader.exec_module(predictor)
kind, limit_mb, network = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "net"
out = {"kind": kind, "limit_mb": limit_mb}
if kind == "data":
    resource.setrlimit(resource.RLIMIT_DATA, (limit_mb << 20, limit_mb << 20))
    limits = predictor.Limits(memory_mb=0, cpu_s=600, open_files=1024, network=network)
else:
    limits = predictor.Limits(memory_mb=limit_mb if kind == "as" else 0, cpu_s=600, open_files=1024, network=network)
out["network"] = predictor.confine(limits)
try:
    import torch
    from transformers import BertConfig, BertModel
    started = time.perf_counter()
    torch.cuda.init()
    out["cuda_init_s"] = round(time.perf_counter() - started, 3)
    model = BertModel(BertConfig()).half().cuda().eval()
    ids = torch.randint(0, 30000, (32, 128), device="cuda")
    with torch.inference_mode():
        for _ in range(3):
            model(input_ids=ids)
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(20):
            model(input_ids=ids)
        torch.cuda.synchronize()
    out["pass_ms"] = round((time.perf_counter() - started) / 20 * 1000, 2)
    out["device"] = torch.cuda.get_device_name(0)
    out["ok"] = True
except BaseException as exc:  # noqa: BLE001 - the point is to see what fails
    out["ok"] = False
    out["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
status = open("/proc/self/status").read()
for key in ("VmPeak", "VmHWM"):
    out[key] = next(line.split(":")[1].strip() for line in status.splitlines() if line.startswith(key))
print(json.dumps(out))
"""

CASES = [
    ("none", 0, "net"),
    ("none", 0, "nonet"),
    ("as", 16384, "net"),
    ("as", 65536, "net"),
    ("data", 16384, "net"),
    ("data", 16384, "nonet"),
]


def main() -> int:
    for kind, limit, network in CASES:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(PREDICTOR), kind, str(limit), network],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        try:
            result = json.loads(line)
        except json.JSONDecodeError:
            result = {"kind": kind, "limit_mb": limit, "ok": False, "exit": done.returncode}
            result["stderr"] = done.stderr[-300:]
        result["wall_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
