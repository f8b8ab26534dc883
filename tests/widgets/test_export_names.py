"""The playground's default export names: inside the chosen directory, and within the file system's name limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_nb import ChatAgent, MirrorChatClient, WorkflowBuilder
from agent_nb.widgets import Playground

NAMES = [
    "trip",
    "a/b",
    "../../../etc/passwd",
    "..",
    ".",
    "/",
    "nul\x00inside",
    "new\nline",
    "tab\tand\rreturn",
    "x" * 300,
    "é" * 300,
    "中" * 300,
    "🙂" * 300,
    "trip 🙂 " * 60,
    "a\\..\\b",
    "🙂/../🙂",
    "-",
    "🙂",
]


def name_limit(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):
        return 255


@pytest.mark.parametrize("name", NAMES, ids=[repr(n)[:24] for n in NAMES])
def test_the_default_export_name_stays_in_the_directory_and_fits(tmp_path: Path, name: str) -> None:
    workflow = WorkflowBuilder(start_executor=ChatAgent(MirrorChatClient(), name="assistant"), name=name).build()
    pg = Playground(workflow, export_dir=tmp_path)
    for path, suffix in ((pg.export_html(), ".html"), (pg.export_json(), ".json")):
        assert path.parent == tmp_path and path.resolve().parent == tmp_path.resolve()
        assert path.name.endswith(suffix) and not path.name.startswith(".")
        assert len(path.name.encode()) <= name_limit(tmp_path)
        assert path.is_file() and path.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, path.name[: -len(".json")] + ".html"])


def test_long_names_that_differ_only_at_the_end_do_not_share_a_file(tmp_path: Path) -> None:
    paths = set()
    for last in "ab":
        workflow = WorkflowBuilder(
            start_executor=ChatAgent(MirrorChatClient(), name="m"), name="x" * 300 + last
        ).build()
        paths.add(Playground(workflow, export_dir=tmp_path).export_json())
    assert len(paths) == 2


def test_a_short_plain_name_is_kept_as_it_is(tmp_path: Path) -> None:
    workflow = WorkflowBuilder(start_executor=ChatAgent(MirrorChatClient(), name="m"), name="Trip planner").build()
    assert Playground(workflow, export_dir=tmp_path).export_html().name == "Trip-planner.html"


@pytest.mark.parametrize("name", ["", "   ", "\x00", "🙂🙂", "../.."])
def test_a_name_with_nothing_usable_gets_a_plain_one(name: str) -> None:
    from agent_nb.widgets.playground import export_name

    assert export_name(name, ".json") == "conversation.json"


def test_the_limit_counts_bytes_not_characters() -> None:
    from agent_nb.widgets.playground import export_name

    name = export_name("é" * 300, ".html", limit=143)  # eCryptfs' limit, say
    assert len(name.encode()) <= 143 and name.endswith(".html") and name.startswith("ééé")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_exporting_again_keeps_the_files_permissions(tmp_path: Path) -> None:
    import stat

    pg = Playground(ChatAgent(MirrorChatClient(), name="assistant"), export_dir=tmp_path)
    path = pg.export_json()
    path.chmod(0o600)  # a private conversation stays private
    assert pg.export_json() == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_an_export_that_fails_keeps_the_old_file_and_names_the_path(tmp_path: Path, monkeypatch) -> None:
    import errno

    from agent_nb import UsageError

    pg = Playground(ChatAgent(MirrorChatClient(), name="assistant"), export_dir=tmp_path)
    path = pg.export_html()
    before = path.read_bytes()

    def full(source, target) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UsageError, match=r"Playground: cannot write the export .*No space left on device \(ENOSPC\)"):
        pg.export_html()
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]
