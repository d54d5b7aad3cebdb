"""Export formats as plugins (hook ``register_export_formats``): the core's ``jsonl`` and ``hf`` are default plugins,
a plugin's format is written by the service, served by ``/export`` and offered by the CLI, and unknown formats are
refused with the list of registered ones."""

from __future__ import annotations

import asyncio
import re
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import gid, make_settings
from toy_plugin import ToyPlugin

from dynaforge import Export, ExportFormat, ExportPage, ExportSplit, WrittenExport, hookimpl
from dynaforge.errors import InvalidInput
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import DEFAULT_PLUGINS, Plugins
from dynaforge.services import auth, examples, exports, tasks
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

ROOT = Path(__file__).resolve().parent.parent


class IdsFormat(ExportFormat):
    """One example id per line, written (not streamed); counts each page it is handed."""

    name = "ids"
    description = "Example ids, one per line."
    media_type = "text/plain"
    extension = ".txt"

    def __init__(self) -> None:
        self.pages: list[int] = []

    async def write(self, export: Export, out: Path) -> WrittenExport:
        handle = await asyncio.to_thread(out.open, "w", encoding="utf-8")
        try:
            async for page in export.pages():
                self.pages.append(len(page.records))
                await asyncio.to_thread(handle.writelines, [f"{record['id']}\n" for record in page.records])
        finally:
            handle.close()
        return WrittenExport((out,), dict(export.counts))


class IdsPlugin:
    def __init__(self) -> None:
        self.format = IdsFormat()

    @hookimpl
    def register_export_formats(self, register):
        register(self.format)


@pytest.fixture
def with_ids(platform):
    plugin = IdsPlugin()
    platform.plugins.register(plugin, "ids-plugin")
    try:
        yield plugin.format
    finally:
        platform.plugins.unregister("ids-plugin")


async def _examples(p, n: int) -> list[int]:
    p.settings.examples_per_minute = 0
    user = await auth.create_user(
        p, Actor.system(), username="alice", email="alice@example.org", password="long enough pw"
    )
    actor = Actor(user.id, user.username)
    made = []
    for i in range(n):
        fields = {"topic": "kettles", "text": f"good {i}", "label": "good"}
        made.append((await examples.submit(p, actor, task_code="toy", fields=fields)).example.id)
    return made


def test_register_export_formats_core_formats_are_default_plugins():
    assert "dynaforge.defaults.exports" in DEFAULT_PLUGINS
    p = Plugins(allowlist=set())
    assert list(p.registry.export_formats) == ["jsonl", "hf"]
    assert {p.registry.owners[("export_formats", n)] for n in ("jsonl", "hf")} == {"dynaforge.defaults.exports"}
    jsonl, hf = p.registry.export_formats["jsonl"], p.registry.export_formats["hf"]
    assert (jsonl.extension, jsonl.media_type, jsonl.folder) == (".jsonl", "application/x-ndjson", False)
    assert hf.folder and hf.description


def test_register_export_formats_refuses_taken_and_unusable_names():
    class Taken:
        @hookimpl
        def register_export_formats(self, register):
            register(type("Mine", (ExportFormat,), {"name": "jsonl"})())

    class Unnamed:
        @hookimpl
        def register_export_formats(self, register):
            register(type("Nameless", (ExportFormat,), {"name": "My Format"})())

    class NotAFormat:
        @hookimpl
        def register_export_formats(self, register):
            register("csv")

    p = Plugins(allowlist=set(), extra=[Taken(), Unnamed(), NotAFormat()])
    assert "ExportFormat 'jsonl' is already registered by dynaforge.defaults.exports" in p.errors["Taken"]
    assert "needs a name of lowercase letters" in p.errors["Unnamed"]
    assert "not a ExportFormat" in p.errors["NotAFormat"]
    assert list(p.registry.export_formats) == ["jsonl", "hf"]


async def test_register_export_formats_a_plugins_format_is_written_page_by_page(platform, with_ids, tmp_path):
    made = await _examples(platform, 5)
    plan = await exports.prepare_export(platform, Actor.system(), "toy")
    seen: list[int] = []
    result = await exports.write(platform, plan, "ids", tmp_path / "ids.txt", page_size=2, progress=seen.append)
    assert (tmp_path / "ids.txt").read_text().split() == [gid("Example", i) for i in made]
    assert with_ids.pages == [2, 2, 1] and seen == [2, 2, 1]
    assert (result.total, result.counts, result.files) == (5, {"round1": 5}, (tmp_path / "ids.txt",))
    assert [f.name for f in exports.export_formats(platform)] == ["jsonl", "hf", "ids"]


async def test_register_export_formats_unknown_format_lists_the_registered_ones(platform, with_ids):
    with pytest.raises(InvalidInput) as caught:
        exports.choose_format(platform, "xml")
    [error] = caught.value.field_errors
    assert (error.field, error.rule) == ("format", "choice")
    assert error.message == "'xml' is not an export format; the registered formats are: jsonl, hf, ids"
    assert exports.choose_format(platform, "IDS") is with_ids


async def test_register_export_formats_http_serves_a_plugins_format(platform, with_ids, client, gql):
    listed = (await gql("{ exportFormats { name mediaType extension } }"))["exportFormats"]
    assert [f["name"] for f in listed] == ["jsonl", "hf", "ids"]  # a frontend offers these; anyone may ask
    assert listed[1] == {"name": "hf", "mediaType": "application/zip", "extension": ""}  # a folder, sent zipped
    made = await _examples(platform, 3)
    _, token = await auth.register(platform, username="olga", email="olga@example.org", password="long enough pw")
    user = await auth.authenticate(platform, token)
    await tasks.grant_ownership(platform, Actor.system(), "toy", user.user_id)
    headers = {"Authorization": f"Bearer {token}"}
    response = await client.get("/export/toy", params={"format": "ids", "round": 1}, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert 'filename="dynaforge-toy-round1.txt"' in response.headers["content-disposition"]
    assert response.text.split() == [gid("Example", i) for i in made]
    refused = await client.get("/export/toy", params={"format": "xml"}, headers=headers)
    assert refused.status_code == 400
    assert "the registered formats are: jsonl, hf, ids" in refused.json()["error"]["message"]


def _toy_platform(database_url: str | None) -> Platform:
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), IdsPlugin()])
    return Platform.create(
        make_settings(database_url),
        plugins=plugins,
        inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0),
    )


def test_register_export_formats_cli_lists_and_checks_formats(tmp_path, monkeypatch):
    from dynaforge import cli

    monkeypatch.setenv("DYNAFORGE_LOAD_PLUGINS", "")  # the core's formats only
    runner = CliRunner()
    listed = runner.invoke(cli.main, ["export", "--list-formats"])
    assert listed.exit_code == 0, listed.output
    assert re.search(r"^jsonl\ta \.jsonl file: JSON Lines", listed.output, flags=re.MULTILINE)
    assert re.search(r"^hf\ta folder: A Hugging Face datasets folder", listed.output, flags=re.MULTILINE)

    monkeypatch.setattr(cli, "_platform", _toy_platform)
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    args = ["export", "--task", "toy", "--out", str(tmp_path / "x"), "--database-url", url]
    refused = runner.invoke(cli.main, [*args, "--format", "xml"])
    assert refused.exit_code == 1
    assert "'xml' is not an export format; the registered formats are: jsonl, hf, ids" in refused.output


def _docs_format_module() -> types.ModuleType:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("### register_export_formats", 1)[1].split("\n### ", 1)[0]
    source = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[1]
    module = types.ModuleType("formality_csv_format")
    exec(compile(source, "formality_csv_format", "exec"), module.__dict__)
    return module


async def test_register_export_formats_docs_example_writes_its_csv(tmp_path):
    module = _docs_format_module()
    p = Plugins(allowlist=set(), extra=[module])
    fmt = p.registry.export_formats["formality-csv"]
    records = [
        {
            "id": i,
            "status": "ACCEPTED",
            "fields": {"situation": "a letter", "sentence": f"Dear sir {i}", "label": "formal"},
        }
        for i in range(3)
    ]

    async def pages():
        yield ExportPage("round1", 1, records[:2])
        yield ExportPage("round1", 1, records[2:])

    export = Export(
        task=None,  # the example reads records only
        basename="dynaforge-formality-round1",
        splits=(ExportSplit("round1", 1, 3),),
        statuses=("ACCEPTED",),
        whole_task=False,
        read_pages=pages,
    )
    written = await fmt.write(export, tmp_path / "out.csv")
    assert written.counts == {"round1": 3} and written.files == (tmp_path / "out.csv",)
    lines = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()
    assert lines == ["situation,sentence,label,status"] + [f"a letter,Dear sir {i},formal,ACCEPTED" for i in range(3)]
