"""Damaged, forged and too-deep checkpoints: a storage gives back exactly what was asked, or a CheckpointError.

Never an older checkpoint in place of the newest, never a raw ``json``, ``KeyError``, ``TypeError`` or
``RecursionError``. The SQLite file is damaged through a connection of its own, as another program would.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from doubles import Holder, RecordingAgent

from agent_nb import (
    AgentExecutor,
    CheckpointError,
    WorkflowBuilder,
)
from agent_nb.workflow import FileCheckpointStorage, InMemoryCheckpointStorage, SQLiteCheckpointStorage
from agent_nb.workflow.checkpoints.format import dumps
from agent_nb.workflow.checkpoints.storage import _checksum

DEEP = 100_000


def chain(n: int = 2, storage: Any = None) -> tuple[Any, list[RecordingAgent]]:
    agents = [RecordingAgent(f"a{i}") for i in range(n)]
    executors = [AgentExecutor(a) for a in agents]
    builder = WorkflowBuilder(start_executor=executors[0], checkpoint_storage=storage)
    for x, y in itertools.pairwise(executors):
        builder.add_edge(x, y)
    return builder.build(), agents


async def written(directory: Path) -> tuple[Path, list[Any]]:
    """A 2-agent run in a file storage: its log and its three checkpoints, as loaded before any damage."""
    storage = FileCheckpointStorage(directory)
    workflow, _ = chain(2, storage)
    await workflow.run("hello")
    checkpoints = [storage.load(i.id) for i in storage.list()]
    storage.close()
    return directory / "checkpoints.jsonl", checkpoints


def outcome(call: Callable[[], Any]) -> Any:
    """What a storage call gave: its value, or the CheckpointError it raised (anything else fails the test)."""
    try:
        return call()
    except CheckpointError as exc:
        return exc


def newest_record(data: bytes) -> int:
    """Where the last record (a line) of a log starts."""
    return data.rstrip(b"\n").rfind(b"\n") + 1


# -- the file storage -----------------------------------------------------------------------------


async def test_a_damaged_record_marker_on_the_newest_checkpoint_never_gives_an_older_one(tmp_path: Path) -> None:
    log, checkpoints = await written(tmp_path)
    newest = checkpoints[-1]
    data = log.read_bytes()
    start = newest_record(data)
    assert data[start:].startswith(b'["c"')
    log.write_bytes(data[:start] + b'["x"' + data[start + 4 :])
    lines = data.count(b"\n")

    storage = FileCheckpointStorage(tmp_path)
    with pytest.raises(CheckpointError) as caught:
        storage.latest()
    message = str(caught.value)
    assert str(log) in message and f"line {lines}" in message and newest.id in message
    assert "repair()" in message and f"load({checkpoints[-2].id!r})" in message
    for call in (lambda: storage.load(newest.id), storage.list):
        with pytest.raises(CheckpointError, match=rf"line {lines}.*repair\(\)"):
            call()
    assert storage.load(checkpoints[-2].id) == checkpoints[-2]  # an older one, asked for on purpose

    assert storage.repair() > 0
    assert FileCheckpointStorage(tmp_path).latest() == checkpoints[-2]  # after repair(), by choice
    assert newest.id in (tmp_path / "checkpoints.jsonl.damaged").read_text()  # set aside, not thrown away


def _damaged_copies(data: bytes, start: int) -> Iterator[tuple[str, bytes]]:
    """The log with one byte of its last record (and the line break before it) flipped or deleted."""
    for i in range(start - 1, len(data)):
        for bit in (0x01, 0x20, 0x80):
            yield f"byte {i} ^ {bit:#x}", data[:i] + bytes([data[i] ^ bit]) + data[i + 1 :]
        yield f"byte {i} deleted", data[:i] + data[i + 1 :]


async def test_every_byte_of_the_newest_record_damaged_gives_that_checkpoint_or_a_checkpoint_error(
    tmp_path: Path,
) -> None:
    log, checkpoints = await written(tmp_path / "original")
    newest, older = checkpoints[-1], checkpoints[-2]
    infos = FileCheckpointStorage(log.parent).list()
    data = log.read_bytes()
    directory = tmp_path / "damaged"
    directory.mkdir()
    target = directory / "checkpoints.jsonl"
    tried = refused = 0
    for what, damaged in _damaged_copies(data, newest_record(data)):
        tried += 1
        target.write_bytes(damaged)
        (directory / "checkpoints.jsonl.damaged").unlink(missing_ok=True)
        storage = FileCheckpointStorage(directory)
        latest, loaded, listed = (
            outcome(storage.latest),
            outcome(functools.partial(storage.load, newest.id)),
            outcome(storage.list),
        )
        assert latest == newest or isinstance(latest, CheckpointError), what
        assert loaded == newest or isinstance(loaded, CheckpointError), what
        assert listed == infos or isinstance(listed, CheckpointError), what
        for error in (latest, loaded, listed):
            if isinstance(error, CheckpointError):
                assert str(target) in str(error) and "repair()" in str(error), (what, str(error))
        refused += isinstance(latest, CheckpointError)
        if "0x20" in what or "0x80" in what:
            continue  # repair() is checked after the other half of the damages (each repair rewrites the log)
        # repair() keeps every intact record: the older checkpoints come back exactly
        storage.repair()
        again = FileCheckpointStorage(directory)
        assert again.load(older.id) == older, what
        assert again.latest() in (newest, older), what
        assert [i.id for i in again.list()] in ([c.id for c in checkpoints], [c.id for c in checkpoints[:-1]]), what
    assert refused > 0.9 * tried  # almost every damage is seen (a few leave the JSON meaning the same)


async def test_a_damaged_delete_record_is_not_skipped(tmp_path: Path) -> None:
    log, checkpoints = await written(tmp_path)
    assert FileCheckpointStorage(tmp_path).delete(checkpoints[-1].id)
    text = log.read_text()
    assert text.endswith(f'["d","{checkpoints[-1].id}"]\n')
    log.write_text(text[: -len(checkpoints[-1].id) - 4] + 'X"]\n')  # the id it deletes, garbled
    with pytest.raises(CheckpointError, match=r"newest record .* is damaged"):
        FileCheckpointStorage(tmp_path).latest()  # the deleted checkpoint must not come back as the newest


async def test_an_old_damaged_record_is_named_and_the_newest_still_loads(tmp_path: Path) -> None:
    log, checkpoints = await written(tmp_path)
    lines = log.read_text().split("\n")
    (number,) = [n for n, line in enumerate(lines, 1) if f'"id":"{checkpoints[0].id}"' in line]
    lines[number - 1] = lines[number - 1].replace('"superstep":0', '"superstep":9')
    log.write_text("\n".join(lines))

    storage = FileCheckpointStorage(tmp_path)
    assert storage.latest() == checkpoints[-1]  # the damage is older than the newest: it is still the newest
    assert storage.load(checkpoints[1].id) == checkpoints[1]
    with pytest.raises(CheckpointError) as caught:
        storage.load(checkpoints[0].id)
    assert f"line {number}" in str(caught.value) and "checksum" in str(caught.value)
    assert caught.value.checkpoint_id == checkpoints[0].id
    with pytest.raises(CheckpointError) as listed:
        storage.list()  # a list without it would not be the list asked for
    assert f"line {number}" in str(listed.value) and checkpoints[0].id in str(listed.value)
    assert "repair()" in str(listed.value)
    with pytest.raises(CheckpointError, match=r"repair\(\) first"):
        storage.compact()
    assert storage.repair() > 0 and storage.repair() == 0
    assert [i.id for i in storage.list()] == [c.id for c in checkpoints[1:]]
    fresh, agents = chain(2)
    await fresh.run(checkpoint_id=checkpoints[1].id, checkpoint_storage=FileCheckpointStorage(tmp_path))
    assert [len(a.calls) for a in agents] == [0, 1]


async def test_a_checkpoint_id_that_is_not_in_the_log_is_missing_not_damaged(tmp_path: Path) -> None:
    _, checkpoints = await written(tmp_path)
    with pytest.raises(CheckpointError, match="there is no checkpoint 'nope'") as caught:
        FileCheckpointStorage(tmp_path).load("nope")
    assert checkpoints[-1].id in str(caught.value)


# -- the SQLite storage ----------------------------------------------------------------------------


async def sqlite_written(path: Path) -> list[Any]:
    with contextlib.closing(SQLiteCheckpointStorage(path)) as storage:
        workflow, _ = chain(2, storage)
        await workflow.run("hello")
        return [storage.load(i.id) for i in storage.list()]


@contextlib.contextmanager
def other_program(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection of its own to the file, as another program would have."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        yield db


async def test_a_damaged_old_sqlite_header_is_named_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    checkpoints = await sqlite_written(path)
    old = checkpoints[0].id
    with other_program(path) as db:
        db.execute("UPDATE checkpoints SET header = 'garbage' WHERE id = ?", (old,))
    with contextlib.closing(SQLiteCheckpointStorage(path)) as storage:
        with pytest.raises(CheckpointError) as caught:
            storage.list()
        assert old in str(caught.value) and str(path) in str(caught.value)
        assert f"delete({old!r})" in str(caught.value)
        assert caught.value.checkpoint_id == old
        assert storage.latest() == checkpoints[-1]
        assert storage.load(checkpoints[1].id) == checkpoints[1]
        with pytest.raises(CheckpointError, match=rf"checkpoint {old!r}.*not JSON.*delete\({old!r}\)"):
            storage.load(old)
        assert storage.delete(old)
        assert [i.id for i in storage.list()] == [c.id for c in checkpoints[1:]]


def _column_copies(value: bytes) -> Iterator[tuple[str, bytes]]:
    for i in range(len(value)):
        for bit in (0x01, 0x80):
            yield f"byte {i} ^ {bit:#x}", value[:i] + bytes([value[i] ^ bit]) + value[i + 1 :]
        yield f"byte {i} deleted", value[:i] + value[i + 1 :]


@pytest.mark.parametrize("column", ["header", "body", "id", "workflow"])
async def test_every_byte_of_the_newest_sqlite_row_damaged_gives_that_checkpoint_or_a_checkpoint_error(
    tmp_path: Path, column: str
) -> None:
    path = tmp_path / "c.db"
    checkpoints = await sqlite_written(path)
    newest = checkpoints[-1]
    storage = SQLiteCheckpointStorage(path)
    infos = storage.list()
    with other_program(path) as db:
        (rowid, original) = db.execute(
            f"SELECT rowid, CAST({column} AS BLOB) FROM checkpoints WHERE id = ?", (newest.id,)
        ).fetchone()
        tried = refused = 0
        for what, damaged in _column_copies(original):
            tried += 1
            db.execute(f"UPDATE checkpoints SET {column} = CAST(? AS TEXT) WHERE rowid = ?", (damaged, rowid))
            latest, loaded, listed = (
                outcome(storage.latest),
                outcome(lambda: storage.load(newest.id)),
                outcome(storage.list),
            )
            assert latest == newest or isinstance(latest, CheckpointError), what
            assert loaded == newest or isinstance(loaded, CheckpointError), what
            assert listed == infos or isinstance(listed, CheckpointError), what
            for error in (latest, loaded, listed):
                if isinstance(error, CheckpointError):
                    assert str(path) in str(error), (what, str(error))
            refused += isinstance(latest, CheckpointError)
        db.execute(f"UPDATE checkpoints SET {column} = CAST(? AS TEXT) WHERE rowid = ?", (original, rowid))
    assert storage.latest() == newest
    assert refused > 0.9 * tried
    storage.close()


async def test_an_sqlite_header_that_is_not_text_is_a_checkpoint_error(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    checkpoints = await sqlite_written(path)
    with other_program(path) as db:
        db.execute("UPDATE checkpoints SET header = CAST(X'7B22FF' AS TEXT) WHERE id = ?", (checkpoints[-1].id,))
    with contextlib.closing(SQLiteCheckpointStorage(path)) as storage:
        for call in (storage.latest, lambda: storage.load(checkpoints[-1].id), storage.list):
            with pytest.raises(CheckpointError, match=checkpoints[-1].id):
                call()


async def test_a_refused_sqlite_write_names_what_it_was_keeps_nothing_and_the_storage_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    checkpoints = await sqlite_written(path)
    waiting = checkpoints[-1]
    with other_program(path) as db:  # another program refuses every new row
        for table in ("answers", "checkpoints"):
            db.execute(f"CREATE TRIGGER no_{table} BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with contextlib.closing(SQLiteCheckpointStorage(path)) as storage:
        attempts = [
            (
                lambda: storage.claim_answer(waiting.id, "r1", {"by": "me"}),
                f"the answer to request 'r1' of checkpoint {waiting.id!r}",
            ),
            (lambda: storage.save(waiting, [], [("f" * 32, '"new"')]), f"checkpoint {waiting.id!r}"),
        ]
        for attempt, what in attempts:
            with pytest.raises(CheckpointError) as caught:
                attempt()
            assert str(caught.value).startswith(f"cannot write {what} to {path} (nothing of it was kept): refused")
            assert caught.value.checkpoint_id == waiting.id
        with other_program(path) as db:
            assert db.execute("SELECT count(*) FROM messages WHERE hash = ?", ("f" * 32,)).fetchone() == (0,)
            db.execute("DROP TRIGGER no_answers")
            db.execute("DROP TRIGGER no_checkpoints")
        assert storage.claim_answer(waiting.id, "r1", {"by": "me"}) is None  # not left inside a transaction
        storage.save(waiting, [], [("f" * 32, '"new"')])
        assert storage.load(waiting.id) == waiting
    for call in (
        storage.list,
        storage.latest,
        lambda: storage.load(waiting.id),
        lambda: storage.read_chains([]),
        lambda: storage.delete(waiting.id),
        lambda: storage.save(waiting, [], []),
        lambda: storage.claim_answer(waiting.id, "r2", {}),
        lambda: storage.release_answer(waiting.id, "r1"),
        lambda: storage.answer_to(waiting.id, "r1"),
    ):
        with pytest.raises(CheckpointError, match=r"^SQLiteCheckpointStorage\(.*\) is closed: open a new one$"):
            call()


def test_the_sqlite_storage_is_a_context_manager(tmp_path: Path) -> None:
    with SQLiteCheckpointStorage(tmp_path / "c.db") as storage:
        assert storage.list() == []
    with pytest.raises(CheckpointError, match="closed"):
        storage.list()
    with FileCheckpointStorage(tmp_path / "files") as files:
        assert files.list() == []


# -- forged checkpoints: a valid checksum, a body this workflow cannot take --------------------------


def forge_file(log: Path, checkpoint_id: str, edit: Callable[[dict[str, Any]], str]) -> None:
    """Rewrite a checkpoint's body with ``edit`` (which returns the new body text) and a matching checksum."""
    lines = log.read_text().split("\n")
    (i,) = [n for n, line in enumerate(lines) if line.startswith('["c"') and f'"id":"{checkpoint_id}"' in line]
    _, header, body = json.loads(lines[i])
    text = edit(body)
    header["checksum"] = _checksum(header, text)
    lines[i] = f'["c",{dumps(header)},{text}]'
    log.write_text("\n".join(lines))


def forge_sqlite(path: Path, checkpoint_id: str, edit: Callable[[dict[str, Any]], str]) -> None:
    with other_program(path) as db:
        header_text, body_text = db.execute(
            "SELECT header, body FROM checkpoints WHERE id = ?", (checkpoint_id,)
        ).fetchone()
        header = json.loads(header_text)
        text = edit(json.loads(body_text))
        header["checksum"] = _checksum(header, text)
        db.execute("UPDATE checkpoints SET header = ?, body = ? WHERE id = ?", (dumps(header), text, checkpoint_id))


def deep_text(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


def with_value(body: dict[str, Any], key: str, value_text: str) -> str:
    body[key] = "<here>"
    return dumps(body).replace('"<here>"', value_text, 1)


FORGERIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "message-in-flight-to-a-ghost": lambda b: with_value(b, "in_flight", '[["ghost","hi"]]'),
    "a-ghost-executor": lambda b: dumps({**b, "executors": {**b["executors"], "ghost": b["executors"]["a0"]}}),
    "an-executor-missing": lambda b: dumps({**b, "executors": {"a0": b["executors"]["a0"]}}),
    "a-request-of-a-ghost": lambda b: with_value(
        b, "pending", '[{"request_id":"r1","executor_id":"ghost","data":"ok?","response_type":"bool"}]'
    ),
    "a-fan-in-that-is-not-there": lambda b: with_value(b, "fan_in", '[[7,{"a0":["hi"]}]]'),
    "executors-not-a-mapping": lambda b: with_value(b, "executors", "[1,2]"),
    "state-nested-100000-deep": lambda b: with_value(b, "state", deep_text()),
    "in-flight-nested-100000-deep": lambda b: with_value(b, "in_flight", f'[["a1",{deep_text()}]]'),
}
PROBLEMS = {
    "message-in-flight-to-a-ghost": "'ghost', which is not an executor of this workflow",
    "a-ghost-executor": r"executors this workflow lacks: \['ghost'\]",
    "an-executor-missing": r"lacks executors of this workflow: \['a1'\]",
    "a-request-of-a-ghost": "'ghost', which is not an executor of this workflow",
    "a-fan-in-that-is-not-there": "fan-in 7, which this workflow does not have",
    "executors-not-a-mapping": "incomplete or damaged",
    "state-nested-100000-deep": "nested too deeply",
    "in-flight-nested-100000-deep": "nested too deeply",
}


@pytest.mark.parametrize("kind", ["file", "sqlite"])
@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_forged_checkpoint_is_refused_naming_it_and_what_is_wrong(
    tmp_path: Path, kind: str, forgery: str
) -> None:
    if kind == "file":
        log, checkpoints = await written(tmp_path)
        mid = checkpoints[1].id
        forge_file(log, mid, FORGERIES[forgery])
        storage: Any = FileCheckpointStorage(tmp_path)
    else:
        path = tmp_path / "c.db"
        mid = (await sqlite_written(path))[1].id
        forge_sqlite(path, mid, FORGERIES[forgery])
        storage = SQLiteCheckpointStorage(path)
    fresh, agents = chain(2)
    with pytest.raises(CheckpointError, match=PROBLEMS[forgery]) as caught:
        await fresh.run(checkpoint_id=mid, checkpoint_storage=storage)
    assert mid in str(caught.value) and caught.value.checkpoint_id == mid
    assert not any(a.calls for a in agents) and all(len(e.conversation) == 0 for e in fresh.executors.values())


async def test_the_newest_checkpoint_nested_too_deeply_is_refused_by_latest(tmp_path: Path) -> None:
    log, checkpoints = await written(tmp_path)
    forge_file(log, checkpoints[-1].id, FORGERIES["state-nested-100000-deep"])
    with pytest.raises(CheckpointError, match=rf"{checkpoints[-1].id}.*nested too deeply"):
        FileCheckpointStorage(tmp_path).latest()


# -- writing a state nested too deeply --------------------------------------------------------------


def deep_list(depth: int = DEEP) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
async def test_a_state_nested_too_deeply_fails_the_checkpoint_naming_the_executor(tmp_path: Path, kind: str) -> None:
    storage = {
        "memory": InMemoryCheckpointStorage,
        "file": lambda: FileCheckpointStorage(tmp_path),
        "sqlite": lambda: SQLiteCheckpointStorage(tmp_path / "c.db"),
    }[kind]()
    workflow = WorkflowBuilder(start_executor=Holder("keeper", deep_list())).build()
    with pytest.raises(CheckpointError, match=r"executor 'keeper': its state is nested too deeply"):
        await workflow.run("hi", checkpoint_storage=storage)
    with pytest.raises(CheckpointError, match=r"the shared state is nested too deeply"):
        await (
            WorkflowBuilder(start_executor=Holder("k", None))
            .build()
            .run("hi", state={"deep": deep_list()}, checkpoint_storage=storage)
        )
    assert storage.list() == []


async def test_a_storage_that_saw_a_torn_tail_reads_again_once_another_storage_cut_it_off(tmp_path: Path) -> None:
    log, checkpoints = await written(tmp_path)
    with log.open("ab") as f:
        f.write(b'["c",{"id":"0009-cut-off"')  # a write a kill cut short
    reader = FileCheckpointStorage(tmp_path)
    with pytest.raises(CheckpointError, match="incomplete"):
        reader.latest()
    assert FileCheckpointStorage(tmp_path).repair() > 0  # another process repairs: the same file, cut back
    assert reader.latest() == checkpoints[-1]
    assert [i.id for i in reader.list()] == [c.id for c in checkpoints]
