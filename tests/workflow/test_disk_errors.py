"""A full disk and a read-only place, for real: a small tmpfs mounted by the test, or a file-size limit.

A full disk during a checkpoint is a ``CheckpointError`` naming the file, with the storage's own words
("No space left on device", SQLite's "database or disk is full"), and leaves every checkpoint written
before it readable. A read-only place is an agent_nb error naming the path and what to do. Root ignores
file permissions, so read-only means a read-only mount here.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from doubles import RecordingAgent, subprocess_env

from agent_nb import AgentExecutor, ArgumentError, CheckpointError, Message, UsageError, WorkflowBuilder
from agent_nb.workflow import FileCheckpointStorage, SQLiteCheckpointStorage


def chain(n: int = 3, storage: Any = None) -> tuple[Any, list[RecordingAgent]]:
    agents = [RecordingAgent(f"a{i}") for i in range(n)]
    executors = [AgentExecutor(a) for a in agents]
    builder = WorkflowBuilder(start_executor=executors[0], checkpoint_storage=storage)
    for x, y in itertools.pairwise(executors):
        builder.add_edge(x, y)
    return builder.build(), agents


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``disk("256k")``: a tmpfs of that size, mounted for this test only (unmounted after it)."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a tmpfs needs root and the mount command; the full-disk check needs one")
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where))
        if done.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        if _run("umount", str(where)).returncode != 0:
            _run("umount", "-l", str(where))  # something still holds it open: detach it now, free it when closed


def fill(where: Path, leave: int = 0) -> Path:
    """Fill the file system of ``where`` up (but for ``leave`` bytes); the file to remove to free it again."""
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as f:
        while True:
            room = os.statvfs(where).f_bavail * os.statvfs(where).f_frsize - leave
            if room <= 0:
                break
            try:
                f.write(b"\0" * min(room, 1 << 16))
            except OSError:
                break
    return filler


async def checkpoint_until_full(workflow: Any) -> tuple[list[str], CheckpointError]:
    """Runs with large inputs until a checkpoint fails; the ids of every checkpoint saved before, in order."""
    saved: list[str] = []
    for k in range(1000):
        try:
            async for event in workflow.run(Message("user", f"turn {k} " + "x" * 3000), stream=True):
                if event.type == "checkpoint":
                    saved.append(event.checkpoint_id)
        except CheckpointError as exc:
            return saved, exc
    raise AssertionError("the disk never filled up")


async def test_a_full_disk_fails_the_file_checkpoint_naming_the_log_and_loses_nothing_before(disk: Any) -> None:
    root = disk("256k")
    directory = root / "checkpoints"
    storage = FileCheckpointStorage(directory)
    workflow, _ = chain(3, storage)
    await workflow.run("before the disk filled up")
    before = [i.id for i in storage.list()]
    filler = fill(root, leave=24 * 1024)
    saved, error = await checkpoint_until_full(workflow)
    saved = before + saved

    log = directory / "checkpoints.jsonl"
    assert str(log) in str(error) and "No space left on device" in str(error)
    assert "free some space" in str(error).lower()
    assert isinstance(error.__cause__, OSError)
    # every checkpoint written before the failure is there, and nothing else
    fresh = FileCheckpointStorage(directory)
    fresh.repair()
    assert [i.id for i in fresh.list()] == saved
    assert all(fresh.load(cid).id == cid for cid in saved)
    # once there is room again, the storage goes on, and so does a new one on the directory
    filler.unlink()
    await workflow.run("after")
    again, agents = chain(3)
    result = await again.run(checkpoint_id=before[1], checkpoint_storage=FileCheckpointStorage(directory))
    assert result.status == "completed" and agents[-1].calls
    assert FileCheckpointStorage(directory).latest().id == result.checkpoint_id


async def test_a_full_disk_fails_the_sqlite_checkpoint_with_sqlites_own_words(disk: Any) -> None:
    root = disk("512k")
    path = root / "checkpoints.db"
    storage = SQLiteCheckpointStorage(path)
    workflow, _ = chain(3, storage)
    await workflow.run("before the disk filled up")
    before = [i.id for i in storage.list()]
    filler = fill(root, leave=48 * 1024)
    saved, error = await checkpoint_until_full(workflow)
    saved = before + saved

    assert str(path) in str(error) and "database or disk is full" in str(error)
    assert "cannot rollback" not in str(error) and "free some space" in str(error).lower()
    with contextlib.closing(SQLiteCheckpointStorage(path)) as fresh:
        assert [i.id for i in fresh.list()] == saved
        assert all(fresh.load(cid).id == cid for cid in saved)
    filler.unlink()
    await workflow.run("after")  # the same storage: its connection was left ready, not inside a transaction
    again, _ = chain(3)
    with contextlib.closing(SQLiteCheckpointStorage(path)) as reopened:
        result = await again.run(checkpoint_id=before[1], checkpoint_storage=reopened)
        assert result.status == "completed" and reopened.latest().id == result.checkpoint_id
    storage.close()


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE and SIGXFSZ are POSIX")
def test_a_file_size_limit_fails_the_checkpoint_the_same_way(tmp_path: Path) -> None:
    """No root needed: the kernel refuses a write past RLIMIT_FSIZE with EFBIG, as a full disk refuses it."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, os, resource, signal
        from test_disk_errors import chain, checkpoint_until_full
        from agent_nb.workflow import FileCheckpointStorage

        async def main():
            workflow, _ = chain(3, FileCheckpointStorage({str(tmp_path)!r}))
            await workflow.run("before")
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            size = os.path.getsize({str(tmp_path / "checkpoints.jsonl")!r})
            resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40_000, resource.RLIM_INFINITY))
            saved, error = await checkpoint_until_full(workflow)
            print(json.dumps({{"saved": saved, "error": str(error), "cause": type(error.__cause__).__name__}}))

        asyncio.run(main())
        """
    )
    job = tmp_path / "job.py"
    job.write_text(script)
    env = subprocess_env(__file__)
    done = subprocess.run([sys.executable, str(job)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    log = tmp_path / "checkpoints.jsonl"
    assert str(log) in report["error"] and "File too large" in report["error"] and report["cause"] == "OSError"
    fresh = FileCheckpointStorage(tmp_path)
    fresh.repair()
    assert [i.id for i in fresh.list()][-len(report["saved"]) :] == report["saved"]


# -- read-only places, and places that are not directories ------------------------------------------


def test_a_directory_that_is_a_file_is_a_bad_argument(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("not a directory")
    with pytest.raises(ArgumentError, match=r"FileCheckpointStorage: directory=.*taken.*it names a file"):
        FileCheckpointStorage(tmp_path / "taken")
    with pytest.raises(CheckpointError, match=r"cannot create the checkpoint directory .*taken/inside"):
        FileCheckpointStorage(tmp_path / "taken" / "inside")
    with pytest.raises(CheckpointError, match=r"cannot open the checkpoint database .*taken/c\.db"):
        SQLiteCheckpointStorage(tmp_path / "taken" / "c.db")


async def test_read_only_places_are_named_with_what_to_do(disk: Any) -> None:
    root = disk("1m")
    with contextlib.closing(FileCheckpointStorage(root / "files")) as writer:
        await chain(2, writer)[0].run("hello")
    with contextlib.closing(SQLiteCheckpointStorage(root / "c.db")) as sqlite_storage:
        await chain(2, sqlite_storage)[0].run("hello")
    remount = _run("mount", "-o", "remount,ro", str(root))
    assert remount.returncode == 0, remount.stderr

    files = FileCheckpointStorage(root / "files")
    assert files.latest() is not None  # reading needs no writing
    with pytest.raises(CheckpointError) as caught:
        await chain(2, files)[0].run("more")
    log = root / "files" / "checkpoints.jsonl"
    assert str(log) in str(caught.value) and "read-only" in str(caught.value)
    assert "a directory you can write to" in str(caught.value)

    with pytest.raises(CheckpointError) as caught:
        FileCheckpointStorage(root / "new")
    assert str(root / "new") in str(caught.value) and "read-only" in str(caught.value)

    for path in (root / "c.db", root / "new.db"):
        try:
            storage = SQLiteCheckpointStorage(path)
        except CheckpointError as exc:
            assert str(path) in str(exc) and "read-only" in str(exc)
            assert "a directory you can write to" in str(exc)
            continue
        with (
            contextlib.closing(storage),
            pytest.raises(CheckpointError) as caught,
        ):  # opened for reading: writing is refused
            await chain(2, storage)[0].run("more")
        assert str(path) in str(caught.value) and "read-only" in str(caught.value)


async def test_the_playground_exports_name_a_read_only_path_and_what_to_do(disk: Any) -> None:
    from agent_nb import ChatAgent, MirrorChatClient
    from agent_nb.widgets import Playground

    root = disk("1m")
    assert _run("mount", "-o", "remount,ro", str(root)).returncode == 0
    pg = Playground(ChatAgent(MirrorChatClient(), name="assistant"), export_dir=root)
    for export, path in (
        (pg.export_html, root / "page.html"),
        (pg.export_json, root / "turns.json"),
        (pg.export_html, None),
        (pg.export_json, None),
    ):
        with pytest.raises(UsageError) as caught:
            export(path)
        assert str(path or root) in str(caught.value) and "read-only" in str(caught.value)
        assert "a directory you can write to" in str(caught.value)
    pg.export_html_button.click()  # the button shows the same message instead of raising
    assert "read-only" in pg.status.value


async def test_a_history_on_a_full_disk_or_a_read_only_place_is_named_and_nothing_is_half_written(disk: Any) -> None:
    from agent_nb import AgentSession, ChatAgent, HistoryError, MirrorChatClient, SQLiteHistoryProvider

    root = disk("512k")
    path = root / "history.sqlite"
    session = AgentSession("s")
    with SQLiteHistoryProvider(path) as history:
        agent = ChatAgent(MirrorChatClient(), name="a", history=history)
        await agent.run("kept", session=session)
        filler = fill(root)
        with pytest.raises(HistoryError) as full:
            await agent.run("x" * 200_000, session=session)  # more than the disk has left
        assert str(path) in str(full.value) and "full" in str(full.value) and "Free some space" in str(full.value)
        filler.unlink()
        assert [m.text for m in await history.load(session)] == ["kept", 'I see 1 message: user "kept"']

    assert _run("mount", "-o", "remount,ro", str(root)).returncode == 0
    with pytest.raises(HistoryError) as refused:
        SQLiteHistoryProvider(root / "new.sqlite")
    message = str(refused.value)
    assert (
        str(root / "new.sqlite") in message
        and "read-only" in message
        and "a file in a directory you can write to" in message
    )


# -- a file written whole: a temporary file beside it, renamed over it ------------------------------


def test_write_whole_goes_through_a_new_temporary_file_beside_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_nb.disk import write_whole

    target = tmp_path / "out.json"
    moves: list[tuple[Path, Path]] = []
    real = os.replace

    def replace(source: Any, destination: Any) -> None:
        moves.append((Path(source), Path(destination)))
        real(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    write_whole(target, b"one")
    write_whole(target, b"two")
    assert target.read_bytes() == b"two"
    assert [t for _, t in moves] == [target, target] and moves[0][0] != moves[1][0]  # a name of its own each time
    assert all(s.parent == tmp_path and s.name.startswith(".") and s != target for s, _ in moves)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_write_whole_keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path) -> None:
    import stat

    from agent_nb.disk import write_whole

    kept = tmp_path / "private.json"
    kept.write_bytes(b"old")
    kept.chmod(0o600)
    write_whole(kept, b"new")
    assert kept.read_bytes() == b"new" and stat.S_IMODE(kept.stat().st_mode) == 0o600
    umask = os.umask(0o022)
    os.umask(umask)
    write_whole(tmp_path / "new.json", b"{}")  # a new file: as open() would make it
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o666 & ~umask


def test_write_whole_that_fails_raises_the_oserror_and_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from agent_nb.disk import write_whole

    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def full(source: Any, destination: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError) as caught:
        write_whole(target, b"new")
    assert caught.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    monkeypatch.undo()
    with pytest.raises(IsADirectoryError):
        write_whole(tmp_path, b"new")  # a directory is not replaced by a file
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_write_whole_writes_a_name_as_long_as_the_file_system_allows(tmp_path: Path) -> None:
    from agent_nb.disk import write_whole

    try:
        limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):
        limit = 255
    target = tmp_path / ("x" * (limit - len(".json")) + ".json")
    write_whole(target, b"{}")  # its temporary file's name fits too
    assert target.read_bytes() == b"{}" and [p.name for p in tmp_path.iterdir()] == [target.name]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
async def test_compact_and_repair_keep_the_logs_permissions_and_leave_no_temporary_file(tmp_path: Path) -> None:
    import stat

    storage = FileCheckpointStorage(tmp_path)
    await chain(2, storage)[0].run("hello")
    ids = [i.id for i in storage.list()]
    log = tmp_path / storage.LOG
    log.chmod(0o600)
    assert storage.delete(ids[0])
    storage.compact()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert [i.id for i in FileCheckpointStorage(tmp_path).list()] == ids[1:]
    lines = log.read_text().split("\n")
    lines[-2] = lines[-2].replace('"superstep":', '"superstep":1')  # damage the newest checkpoint
    log.write_text("\n".join(lines))
    assert storage.repair() > 0
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([storage.LOG, storage.DAMAGED])
