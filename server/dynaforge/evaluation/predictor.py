"""A model under evaluation, in a process of its own that holds nothing of the server's.

The evaluation job (:mod:`dynaforge.services.evaluation_runner`) reads the data set and writes the results; the model it
evaluates runs here, in ``python -m dynaforge.evaluation.predictor``, and only answers batches of inputs. What the
model's code can reach is what this process has:

* **no secrets**: the environment is scrubbed (:func:`dynaforge.sandbox.scrubbed_environment`): no ``SECRET_KEY``,
  no database URL, no broker URL. Results go back through the parent, which alone writes to the database;
* **resource limits**, set by this process on itself before any plugin or model code is imported: memory it may
  allocate (``EVAL_MEMORY_LIMIT_MB``, the data limit: heap and private writable mappings, not the address space,
  which CUDA reserves tens of gigabytes of at start-up without using them: see ``bench/gpu_confinement.py``), CPU
  seconds (``EVAL_CPU_LIMIT_S``), open files (``EVAL_OPEN_FILES``), no core files.
  Past the CPU limit the kernel stops the process (SIGXCPU); past the memory limit allocations fail;
* **no network** for models whose backend needs none (:meth:`ModelBackend.needs_network`: an uploaded artifact, a
  model folder read with ``local_files_only``): a new user and network namespace whose only interface, loopback, is
  down. Where the kernel refuses namespaces (some containers) the model runs with the network, and
  :func:`network_isolation` says why: the job worker logs it at start-up;
* it cannot gain privileges (``PR_SET_NO_NEW_PRIVS``) and dies with its parent (``PR_SET_PDEATHSIG``), so a job
  stopped at ``EVAL_TIMEOUT_S`` takes its model with it.

The protocol is one JSON object per line on two pipes, requests in and answers out (what the model prints goes to
stderr, never into the answers)::

    -> {"op": "load", "backend": "transformers", "config": {...}}
    <- {"ok": true, "baseline_mb": 310.2, "load_s": 1.4, "network": "isolated"}
    -> {"op": "predict", "inputs": [{...}, ...]}
    <- {"ok": true, "outputs": [{...}, ...], "seconds": 0.31, "peak_mb": 512.0}
    <- {"ok": false, "error": "ValueError: ...", "log": ["...", ...]}        (any request that failed)

The end of the request pipe ends the process. :class:`ModelProcess` is the parent's side; :class:`LocalModel` runs
a model in the calling process instead (tests with plugins that exist only in the test process).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import IO, Any

log = logging.getLogger("dynaforge.evaluation")

BATCH = 32
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
#: Exit status of a predictor whose parent went away before it could set up.
ORPHANED = 3


class ModelError(Exception):
    """The model failed (it raised, answered badly, or its process was stopped); the message is the submitter's to
    read: the model's own error, or which limit stopped it. Nothing of the server's configuration is in it."""


class ModelProcessLost(ModelError):
    """The model's process was killed from outside (the kernel's out-of-memory killer, an operator): not the model's
    fault for sure, so the job may be tried again; the stored chunks let it resume."""


@dataclass(frozen=True)
class Limits:
    """What the model's process may use. 0 means no limit of that kind."""

    memory_mb: int = 0
    cpu_s: int = 0
    open_files: int = 0
    #: False: run it in a namespace without network (where the kernel allows it).
    network: bool = True

    def args(self) -> list[str]:
        return [
            f"--memory-mb={self.memory_mb}",
            f"--cpu-s={self.cpu_s}",
            f"--open-files={self.open_files}",
            *([] if self.network else ["--no-network"]),
        ]


# ----------------------------------------------------------------------------------------- confinement (the child)
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def unshare_network() -> str | None:
    """Move this (single-threaded) process into a new user and network namespace; None when done, else why not."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are a Linux feature ({sys.platform})"
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        first = os.strerror(ctypes.get_errno())
        # A process with CAP_SYS_ADMIN (root in a container that drops user namespaces) may still unshare the
        # network alone.
        if libc.unshare(_CLONE_NEWNET) != 0:
            return f"the kernel refused a new user and network namespace ({first})"
        return None
    try:  # keep this process's own ids inside the namespace (files it reads stay readable as before)
        with open("/proc/self/setgroups", "w") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w") as fh:
            fh.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as fh:
            fh.write(f"{gid} {gid} 1")
    except OSError:
        pass  # unmapped ids read as "nobody" inside; file access still goes by the real ids
    return None


def _set_limit(kind: int, value: int) -> None:
    """Soft and hard limit ``value`` (never above a hard limit already set); 0 leaves the limit as it is."""
    if value <= 0:
        return
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def confine(limits: Limits) -> str:
    """Apply ``limits`` to this process: what its network is ("isolated", or "open: why")."""
    if sys.platform.startswith("linux"):
        libc = _libc()
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    network = "open"
    if not limits.network:
        why = unshare_network()
        network = "isolated" if why is None else f"open: {why}"
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _set_limit(resource.RLIMIT_DATA, limits.memory_mb * 1024 * 1024)
    # The soft CPU limit sends SIGXCPU (which stops the process); the hard limit, a little later, SIGKILL.
    if limits.cpu_s > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = limits.cpu_s if hard == resource.RLIM_INFINITY else min(limits.cpu_s, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard if hard != resource.RLIM_INFINITY else soft + 5))
    _set_limit(resource.RLIMIT_NOFILE, limits.open_files)
    return network


def _status_mb(key: str) -> float:
    """A ``/proc/self/status`` memory line (``VmRSS``, ``VmHWM``: the peak resident size) in MB; 0 elsewhere."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _length(predictor: Any, item: dict[str, Any]) -> int:
    measure = getattr(predictor, "length", None)
    if callable(measure):
        try:
            return int(measure(item))
        except Exception:  # noqa: BLE001 - a length is only a sorting hint
            pass
    return len(json.dumps(item, ensure_ascii=False))


def predict_bucketed(predictor: Any, inputs: list[dict[str, Any]], batch: int = BATCH) -> list[dict[str, Any]]:
    """Outputs in the order of ``inputs``, predicted in batches of inputs of similar length."""
    order = sorted(range(len(inputs)), key=lambda i: _length(predictor, inputs[i]))
    outputs: list[Any] = [None] * len(inputs)
    for start in range(0, len(order), batch):
        ids = order[start : start + batch]
        answers = predictor.predict([inputs[i] for i in ids])
        if len(answers) != len(ids):
            raise RuntimeError(f"the model answered {len(answers)} outputs for {len(ids)} inputs")
        for i, answer in zip(ids, answers, strict=True):
            outputs[i] = answer
    return outputs


class LogTail(logging.Handler):
    """The last ``lines`` log records at INFO or above, formatted: what a failed run shows its submitter."""

    def __init__(self, lines: int = 50, fmt: str = "%(levelname)s %(name)s: %(message)s"):
        super().__init__(logging.INFO)
        self.lines: deque[str] = deque(maxlen=lines)
        self.setFormatter(logging.Formatter(fmt))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def serve(requests: IO[str], answers: IO[str], network: str) -> int:
    """Answer requests until the request pipe ends (the child's main loop)."""
    from dynaforge import jsonio

    tail = LogTail()
    logging.getLogger().addHandler(tail)
    model: Any = None

    def answer(value: dict[str, Any]) -> None:
        answers.write(jsonio.dumps(value).decode() + "\n")
        answers.flush()

    for line in requests:
        if not line.strip():
            continue
        try:
            request = jsonio.loads(line)
            if request["op"] == "load":
                from dynaforge.plugins import Plugins
                from dynaforge.settings import Settings

                baseline = _status_mb("VmRSS")
                started = time.perf_counter()
                plugins = Plugins(allowlist=Settings().plugin_allowlist())
                backend = plugins.registry.backends.get(request["backend"])
                if backend is None:
                    raise LookupError(f"no model backend {request['backend']!r} is installed in this worker")
                model = backend.load(request["config"] or {})
                answer(
                    {
                        "ok": True,
                        "baseline_mb": baseline,
                        "load_s": time.perf_counter() - started,
                        "network": network,
                    }
                )
            elif request["op"] == "predict":
                if model is None:
                    raise RuntimeError("predict before load")
                started = time.perf_counter()
                outputs = predict_bucketed(model, request["inputs"])
                seconds = time.perf_counter() - started
                answer({"ok": True, "outputs": outputs, "seconds": seconds, "peak_mb": _status_mb("VmHWM")})
            else:
                raise ValueError(f"unknown request {request['op']!r}")
        except MemoryError:
            answer({"ok": False, "error": "MemoryError: the model ran out of memory (EVAL_MEMORY_LIMIT_MB)"})
        except Exception as exc:  # noqa: BLE001 - every failure is the submitter's to read, then the next request
            log.warning("the model failed", exc_info=True)
            answer({"ok": False, "error": f"{type(exc).__name__}: {exc}", "log": list(tail.lines)})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True, help="file descriptor the requests arrive on")
    parser.add_argument("--answers", type=int, required=True, help="file descriptor to write the answers to")
    parser.add_argument("--parent", type=int, default=0, help="the parent's pid: exit when it is gone")
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--cpu-s", type=int, default=0)
    parser.add_argument("--open-files", type=int, default=0)
    parser.add_argument("--no-network", action="store_true")
    args = parser.parse_args(argv)
    limits = Limits(args.memory_mb, args.cpu_s, args.open_files, network=not args.no_network)
    network = confine(limits)
    if args.parent and os.getppid() != args.parent:
        return ORPHANED  # the parent went away before PR_SET_PDEATHSIG was set
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if network.startswith("open: "):
        log.warning("the model runs with the network: %s", network[len("open: ") :])
    if threads := os.environ.get("DYNAFORGE_EVAL_THREADS"):
        try:
            import torch

            torch.set_num_threads(int(threads))
        except ImportError:
            pass
    requests = os.fdopen(args.requests, "r", encoding="utf-8")
    answers = os.fdopen(args.answers, "w", encoding="utf-8")
    return serve(requests, answers, network)


# ------------------------------------------------------------------------------------------ the parent's side
class LocalModel:
    """A model loaded in this process (no confinement): for tests whose plugins exist only in the test process."""

    def __init__(self, backend: Any, config: dict[str, Any]):
        self.baseline_mb = _status_mb("VmRSS")
        self.peak_mb = self.baseline_mb
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._sampler.start()
        self.network = "open"
        self._model = backend.load(config)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_mb = max(self.peak_mb, _status_mb("VmRSS"))

    def predict(self, inputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
        started = time.perf_counter()
        outputs = predict_bucketed(self._model, inputs)
        return outputs, time.perf_counter() - started

    def memory_mb(self) -> float:
        return max(0.0, max(self.peak_mb, _status_mb("VmRSS")) - self.baseline_mb)

    def close(self) -> None:
        self._stop.set()
        self._sampler.join()


_SIGNALS = {
    signal.SIGXCPU: "it used more CPU time than EVAL_CPU_LIMIT_S allows",
    signal.SIGSEGV: "it crashed (segmentation fault)",
    signal.SIGABRT: "it aborted",
}


class ModelProcess:
    """A model in a confined child process (see the module's docstring); blocking calls, for a worker thread."""

    def __init__(
        self,
        backend: str,
        config: dict[str, Any],
        limits: Limits,
        *,
        environment: dict[str, str],
        python: str = sys.executable,
        timeout_s: float | None = None,
    ):
        self.backend, self.config, self.limits = backend, config, limits
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.baseline_mb = 0.0
        self.peak_mb = 0.0
        self.network = "open"
        requests_read, self._requests_write = os.pipe()
        self._answers_read, answers_write = os.pipe()
        command = [
            python,
            "-m",
            "dynaforge.evaluation.predictor",
            f"--requests={requests_read}",
            f"--answers={answers_write}",
            f"--parent={os.getpid()}",
            *limits.args(),
        ]
        try:
            self.process = subprocess.Popen(
                command,
                env=environment,
                pass_fds=(requests_read, answers_write),
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr.fileno(),
                close_fds=True,
            )
        finally:
            os.close(requests_read)
            os.close(answers_write)
        self._requests = os.fdopen(self._requests_write, "w", encoding="utf-8")
        self._answers = os.fdopen(self._answers_read, "r", encoding="utf-8")
        reply = self._ask({"op": "load", "backend": backend, "config": config})
        self.baseline_mb = float(reply.get("baseline_mb") or 0.0)
        self.peak_mb = self.baseline_mb
        self.network = str(reply.get("network") or "open")

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        from dynaforge import jsonio

        try:
            self._requests.write(jsonio.dumps(request).decode() + "\n")
            self._requests.flush()
        except (BrokenPipeError, ValueError):
            raise self._gone() from None
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            ready, _, _ = select.select([self._answers], [], [], max(0.0, remaining))
            if not ready:
                self.close()
                raise ModelError("the model did not answer before EVAL_TIMEOUT_S and was stopped")
        line = self._answers.readline()
        if not line:
            raise self._gone()
        reply: dict[str, Any] = jsonio.loads(line)
        if not reply.get("ok"):
            for entry in reply.get("log") or []:
                log.warning("model: %s", entry)
            raise ModelError(str(reply.get("error") or "the model failed"))
        return reply

    def _gone(self) -> ModelError:
        try:
            status = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        if status < 0:
            try:
                sent: signal.Signals | int = signal.Signals(-status)
            except ValueError:
                sent = -status
            if sent == signal.SIGKILL:
                return ModelProcessLost("the model's process was killed (out of memory, or stopped by an operator)")
            reason = _SIGNALS.get(sent, f"signal {sent.name}") if isinstance(sent, signal.Signals) else f"signal {sent}"
            return ModelError(f"the model's process was stopped: {reason}")
        return ModelError(f"the model's process exited with status {status} before it answered")

    def predict(self, inputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
        reply = self._ask({"op": "predict", "inputs": inputs})
        self.peak_mb = max(self.peak_mb, float(reply.get("peak_mb") or 0.0))
        outputs = reply.get("outputs")
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise ModelError(f"the model answered {len(outputs or [])} outputs for {len(inputs)} inputs")
        return outputs, float(reply.get("seconds") or 0.0)

    def memory_mb(self) -> float:
        return max(0.0, self.peak_mb - self.baseline_mb)

    def close(self) -> None:
        for stream in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_probe: str | None | bool = False


def network_isolation(python: str = sys.executable) -> str | None:
    """None when a model process can be cut off from the network here, else why not (checked once, in a child)."""
    global _probe
    if _probe is False:
        script = "import sys; from dynaforge.evaluation.predictor import unshare_network as u; w = u(); print(w or '')"
        try:
            done = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=30, check=False)
            failed = f"the probe failed: {done.stderr.strip()[-200:]}" if done.returncode else None
            _probe = done.stdout.strip() or failed
        except (OSError, subprocess.TimeoutExpired) as exc:
            _probe = f"the probe failed: {exc}"
    return _probe  # type: ignore[return-value]


if __name__ == "__main__":
    sys.exit(main())
