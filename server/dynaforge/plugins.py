"""The plugin manager: core defaults first, then installed entry points of group ``dynaforge``.

Entry points are loaded one by one so that a plugin that fails to import, implements a misspelled hook, or breaks
while registering is reported by name (at start-up and in the ``plugins`` query) while the others keep working.
``DYNAFORGE_LOAD_PLUGINS`` is an allowlist of entry-point names.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import re
import threading
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from dynaforge import hookspecs
from dynaforge.adversaries.base import Adversary
from dynaforge.crowd import CrowdPlatform
from dynaforge.errors import PluginError
from dynaforge.exporters import ExportFormat
from dynaforge.importers import Importer
from dynaforge.inference.backends import ModelBackend
from dynaforge.tasks.base import RESERVED_METRIC_NAMES, Metric, Perturbation, Slice, Task, choice_labels
from dynaforge.tasks.declarative import DECLARED_PREFIX, DeclaredTask, DeclaredTaskPlugin

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "dynaforge"
_FORMAT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")

DEFAULT_PLUGINS = (
    "dynaforge.defaults.metrics",
    "dynaforge.defaults.text_metrics",
    "dynaforge.defaults.backends.python",
    "dynaforge.defaults.backends.transformers",
    "dynaforge.defaults.backends.http",
    "dynaforge.defaults.backends.openai",
    "dynaforge.defaults.backends.kserve",
    "dynaforge.defaults.perturbations",
    "dynaforge.defaults.importers",
    "dynaforge.defaults.exports",
    "dynaforge.defaults.adversaries",
    "dynaforge.defaults.crowd",
)


@dataclass(frozen=True)
class PluginInfo:
    name: str
    version: str | None
    hooks: tuple[str, ...]
    is_default: bool
    error: str | None = None


def run_maybe_async(result: Any) -> Any:
    """Resolve ``result`` if a hook implementation returned an awaitable, from sync code, even inside a loop."""
    if not inspect.isawaitable(result):
        return result
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(result))
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(_await(result))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner, name="dynaforge-hook")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def await_me_maybe(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass
class Registry:
    """What the loaded plugins registered, keyed by name."""

    tasks: dict[str, Task] = field(default_factory=dict)
    backends: dict[str, ModelBackend] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    perturbations: dict[str, Perturbation] = field(default_factory=dict)
    slices: dict[str, Slice] = field(default_factory=dict)
    importers: dict[str, Importer] = field(default_factory=dict)
    export_formats: dict[str, ExportFormat] = field(default_factory=dict)
    adversaries: dict[str, Adversary] = field(default_factory=dict)
    crowd_platforms: dict[str, CrowdPlatform] = field(default_factory=dict)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> plugin name


_KINDS: dict[str, tuple[str, type, str]] = {
    # hook name: (registry attribute, expected type, key attribute)
    "register_tasks": ("tasks", Task, "code"),
    "register_model_backends": ("backends", ModelBackend, "name"),
    "register_metrics": ("metrics", Metric, "name"),
    "register_perturbations": ("perturbations", Perturbation, "name"),
    "register_fairness_slices": ("slices", Slice, "name"),
    "register_importers": ("importers", Importer, "name"),
    "register_export_formats": ("export_formats", ExportFormat, "name"),
    "register_adversaries": ("adversaries", Adversary, "name"),
    "register_crowd_platforms": ("crowd_platforms", CrowdPlatform, "name"),
}


class Plugins:
    """Loads plugins and exposes their registry and event hooks."""

    def __init__(self, allowlist: set[str] | None = None, extra: Iterable[Any] = (), load_entry_points: bool = True):
        self.pm = pluggy.PluginManager("dynaforge")
        self.pm.add_hookspecs(hookspecs)
        self.errors: dict[str, str] = {}
        self.default_names: set[str] = set()
        self.versions: dict[str, str | None] = {}
        for module_name in DEFAULT_PLUGINS:
            self._register(importlib.import_module(module_name), module_name, default=True)
        if load_entry_points:
            self._load_entry_points(allowlist)
        for plugin in extra:
            self._register(plugin, getattr(plugin, "__name__", None) or type(plugin).__name__)
        self.registry = self._build_registry()
        for name, error in self.errors.items():
            log.error("plugin %s is broken and was not loaded: %s", name, error)

    # ------------------------------------------------------------------ loading
    def _load_entry_points(self, allowlist: set[str] | None) -> None:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if allowlist is not None and ep.name not in allowlist:
                continue
            version = ep.dist.version if ep.dist is not None else None
            self.versions[ep.name] = version
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                self.errors[ep.name] = f"failed to import {ep.value}: {type(exc).__name__}: {exc}"
                continue
            self._register(obj, ep.name)

    def _register(self, obj: Any, name: str, default: bool = False) -> None:
        try:
            self.pm.register(obj, name=name)
        except Exception as exc:
            self.errors[name] = f"could not be registered: {exc}"
            return
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name)
            self.errors[name] = f"implements an unknown hook: {exc}"
            return
        if default:
            self.default_names.add(name)

    def register(self, obj: Any, name: str) -> None:
        """Register a plugin object after start-up (tests, embedding) and rebuild the registry."""
        self.errors.pop(name, None)
        self._register(obj, name)
        if name not in self.errors:
            self.registry = self._build_registry()
        if name in self.errors:
            raise PluginError(f"plugin {name}: {self.errors[name]}")

    def replace_declared(self, tasks: Iterable[DeclaredTask]) -> None:
        """Put ``tasks`` (declared as data: :mod:`dynaforge.tasks.declarative`) in place of the declared tasks loaded
        before, each as a plugin of its own named ``declared:CODE`` (one that cannot be registered, say a code an
        installed plugin has, is listed in ``errors`` like any broken plugin), and rebuild the registry."""
        for name in [n for n, _ in self.pm.list_name_plugin() if n.startswith(DECLARED_PREFIX)]:
            self.pm.unregister(name=name)
        for name in [n for n in self.errors if n.startswith(DECLARED_PREFIX)]:
            del self.errors[name]
        for task in tasks:
            plugin = DeclaredTaskPlugin(task)
            self._register(plugin, plugin.__name__)
        self.registry = self._build_registry()
        for name, error in self.errors.items():
            if name.startswith(DECLARED_PREFIX):
                code = name.removeprefix(DECLARED_PREFIX)
                log.error("declared task %s is broken and was not loaded: %s", code, error)

    def unregister(self, name: str) -> None:
        self.errors.pop(name, None)
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        self.registry = self._build_registry()

    def _build_registry(self) -> Registry:
        registry = Registry()
        # Defaults first so that third-party plugins may not silently replace a core metric or backend.
        # pluggy keeps plugins in a set: use registration order so that "first registered wins" is deterministic.
        in_order = [(name, plugin) for name, plugin in self.pm.list_name_plugin() if plugin is not None]
        ordered = sorted(in_order, key=lambda named: named[0] not in self.default_names)
        for hook_name, (attr, expected, key_attr) in _KINDS.items():
            impls = {id(i.plugin): i for i in getattr(self.pm.hook, hook_name).get_hookimpls()}
            for plugin_name, plugin in ordered:
                impl = impls.get(id(plugin))
                if impl is None:
                    continue
                if plugin_name in self.errors:
                    continue
                collected: list[Any] = []
                try:
                    run_maybe_async(impl.function(register=collected.append))
                    for item in collected:
                        self._check_item(item, expected, key_attr, registry, attr)
                        getattr(registry, attr)[getattr(item, key_attr)] = item
                        registry.owners[(attr, getattr(item, key_attr))] = plugin_name
                except Exception as exc:
                    self.errors[plugin_name] = f"{hook_name} failed: {type(exc).__name__}: {exc}"
                    self.pm.unregister(plugin)
                    return self._build_registry()  # again, without any of the broken plugin's contributions
        # Once everything is registered, a task must name only what some loaded plugin registered: a misspelt metric
        # or backend is caught at start-up, not when the first evaluation or round needs it.
        for code, task in registry.tasks.items():
            problems = task_registry_problems(task, registry)
            if problems:
                plugin_name = registry.owners[("tasks", code)]
                self.errors[plugin_name] = f"register_tasks failed: PluginError: task {code!r}: " + "; ".join(problems)
                self.pm.unregister(name=plugin_name)
                return self._build_registry()
        return registry

    @staticmethod
    def _check_item(item: Any, expected: type, key_attr: str, registry: Registry, attr: str) -> None:
        if not isinstance(item, expected):
            raise PluginError(f"registered {item!r}, which is not a {expected.__name__}")
        key = getattr(item, key_attr, None)
        if key in getattr(registry, attr):
            owner = registry.owners.get((attr, str(key)))
            raise PluginError(f"{expected.__name__} {key!r} is already registered by {owner}")
        if isinstance(item, Importer) and (not isinstance(key, str) or not key.strip()):
            raise PluginError(f"importer {item!r} has no name")
        if isinstance(item, ExportFormat) and (not isinstance(key, str) or not _FORMAT_NAME.match(key)):
            raise PluginError(
                f"export format {item!r} needs a name of lowercase letters, digits, '_' or '-' (what --format names)"
            )
        if isinstance(item, CrowdPlatform) and (not isinstance(key, str) or not _FORMAT_NAME.match(key)):
            raise PluginError(f"crowd platform {item!r} needs a name of lowercase letters, digits, '_' or '-'")
        if isinstance(item, Adversary) and (not isinstance(key, str) or not _FORMAT_NAME.match(key)):
            raise PluginError(f"adversary {item!r} needs a name of lowercase letters, digits, '_' or '-'")
        if isinstance(item, Metric) and key in RESERVED_METRIC_NAMES:
            raise PluginError(f"metric {key!r} is reserved: the leaderboard adds {', '.join(RESERVED_METRIC_NAMES)}")
        if isinstance(item, Task):
            problems = item.check_declaration()
            if problems:
                raise PluginError(f"task {key!r}: " + "; ".join(problems))

    # ------------------------------------------------------------------ queries
    def info(self) -> list[PluginInfo]:
        rows = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or []))
            rows.append(
                PluginInfo(
                    name=name,
                    version=self.versions.get(name),
                    hooks=hooks,
                    is_default=name in self.default_names,
                    error=self.errors.get(name),
                )
            )
        loaded = {r.name for r in rows}
        for name, error in self.errors.items():
            if name not in loaded:
                rows.append(PluginInfo(name, self.versions.get(name), (), False, error))
        return sorted(rows, key=lambda r: (not r.is_default, r.name))

    async def emit(self, hook_name: str, **kwargs: Any) -> None:
        """Call an event hook on every plugin, awaiting async implementations; failures are logged, not raised."""
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            try:
                await await_me_maybe(impl.function(**kwargs))
            except Exception:
                log.exception("plugin %s failed in %s", impl.plugin_name, hook_name)

    def task(self, code: str) -> Task | None:
        return self.registry.tasks.get(code)


def task_registry_problems(task: Task, registry: Registry) -> list[str]:
    """The names ``task`` declares that no plugin in ``registry`` registered (metrics, perturbations, fairness slices,
    its default models' backends) or that another task's plugin registered for that task alone (a ``task_code``
    other than the task's: a subclass inherits its parent's names, not their scope), metrics the task cannot feed
    (one that needs probabilities, on a task whose one target is not a choice field), and default model
    configurations their backend refuses."""
    problems = []
    for kind, attr, names, registered in (
        ("metric", "metrics", task.metrics, registry.metrics),
        ("perturbation", "perturbations", task.perturbations, registry.perturbations),
        ("fairness slice", "slices", task.fairness_slices, registry.slices),
    ):
        for name in names:
            item = registered.get(name)
            if item is None:
                known = ", ".join(sorted(registered)) or "none"
                problems.append(f"{kind} {name!r} is not registered by any loaded plugin (registered: {known})")
                continue
            owner = getattr(item, "task_code", None)
            if owner is not None and owner != task.code:
                plugin = registry.owners.get((attr, name), "a plugin")
                problems.append(
                    f"{kind} {name!r} belongs to task {owner!r} (registered by {plugin} with task_code={owner!r}), "
                    f"not to {task.code!r}: register one for {task.code!r} (task_code={task.code!r}), or make it "
                    "shared (task_code=None)"
                )
    for name in task.metrics:
        metric = registry.metrics.get(name)
        if metric is not None and "probabilities" in metric.needs and choice_labels(task) is None:
            problems.append(
                f"metric {name!r} needs probabilities over the labels of the task's one choice target, and task "
                f"{task.code!r} has no such target: drop the metric"
            )
    for spec in task.default_target_models:
        backend = registry.backends.get(spec.backend)
        if backend is None:
            known = ", ".join(sorted(registry.backends)) or "none"
            problems.append(
                f"default model {spec.name}: backend {spec.backend!r} is not registered (registered: {known})"
            )
            continue
        for problem in backend.check_config(spec.config):
            problems.append(f"default model {spec.name}: {problem}")
    return problems
