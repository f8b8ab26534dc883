"""Checkpoints: what they hold, resuming from them, and every way a stored one can be bad."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from doubles import Holder, RecordingAgent, subprocess_env

from agent_nb import (
    AgentExecutor,
    AgentSession,
    ChatAgent,
    CheckpointError,
    EchoChatClient,
    Message,
    MirrorChatClient,
    StepFailed,
    WorkflowBuilder,
)
from agent_nb.workflow import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    SQLiteCheckpointStorage,
)

STORAGES = ["memory", "file", "sqlite"]


def make_storage(kind: str, tmp_path: Path) -> Any:
    if kind == "memory":
        return InMemoryCheckpointStorage()
    if kind == "file":
        return FileCheckpointStorage(tmp_path / "checkpoints")
    return SQLiteCheckpointStorage(tmp_path / "checkpoints.db")


def reopen(kind: str, storage: Any, tmp_path: Path) -> Any:
    """The same storage as a new process would open it (the in-memory one can only be shared)."""
    return storage if kind == "memory" else make_storage(kind, tmp_path)


def chain(n: int = 3, *, storage: Any = None, fail_at: int | None = None, **mode: Any) -> Any:
    agents = [RecordingAgent(f"a{i}", fail=RuntimeError("boom") if i == fail_at else None) for i in range(n)]
    executors = [AgentExecutor(a, **mode) for a in agents]
    builder = WorkflowBuilder(start_executor=executors[0], checkpoint_storage=storage)
    for x, y in itertools.pairwise(executors):
        builder.add_edge(x, y)
    return builder.build(), agents


@pytest.mark.parametrize("kind", STORAGES)
async def test_a_run_takes_one_checkpoint_at_the_start_and_one_after_each_superstep(kind: str, tmp_path: Path) -> None:
    storage = make_storage(kind, tmp_path)
    workflow, _ = chain(3, storage=storage)
    result = await workflow.run("hello")
    infos = storage.list()
    assert [i.superstep for i in infos] == [0, 1, 2, 3]
    assert [i.status for i in infos] == ["running", "running", "running", "completed"]
    assert [i.previous for i in infos] == [None, *(i.id for i in infos[:-1])]
    assert result.checkpoint_id == infos[-1].id == storage.latest().id
    saved = [e for e in result.events if e.type == "checkpoint"]
    assert [e.checkpoint_id for e in saved] == [i.id for i in infos]


@pytest.mark.parametrize("kind", STORAGES)
async def test_resuming_mid_run_in_a_fresh_workflow_runs_only_what_was_left(kind: str, tmp_path: Path) -> None:
    storage = make_storage(kind, tmp_path)
    workflow, _ = chain(4, storage=storage)
    whole = await workflow.run("hello")
    after_two = storage.list()[2]

    fresh, agents = chain(4)
    resumed = await fresh.run(checkpoint_id=after_two.id, checkpoint_storage=reopen(kind, storage, tmp_path))
    assert [len(a.calls) for a in agents] == [0, 0, 1, 1]
    assert [m.text for m in agents[3].seen[0]] == ["hello", "a0 saw 1", "a1 saw 2", "a2 saw 3"]
    assert resumed.text == whole.text == "a3 saw 4"
    assert [len(e.conversation) for e in fresh.executors.values()] == [2, 3, 4, 5]
    # one message object per message, shared by every executor that holds it, as before the checkpoint
    a0, a3 = fresh.executors["a0"].conversation, fresh.executors["a3"].conversation
    assert a0[0] is a3[0] and a0[1] is a3[1]


async def test_a_resumed_run_writes_its_own_checkpoints_linked_to_the_one_it_resumed(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(3, storage=storage)
    await workflow.run("hello")
    start = storage.list()[1]
    fresh, _ = chain(3, storage=storage)
    result = await fresh.run(checkpoint_id=start.id)
    new = storage.list()[-2:]
    assert new[0].previous == start.id and new[1].previous == new[0].id
    assert result.checkpoint_id == new[1].id and new[1].status == "completed"


def test_resuming_in_a_new_process_from_the_file_storage(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from test_checkpoints import chain
        from agent_nb.workflow import FileCheckpointStorage

        async def main(step):
            storage = FileCheckpointStorage({str(tmp_path)!r})
            if step == "first":
                workflow, _ = chain(3, storage=storage)
                await workflow.run("from another process")
                print(storage.list()[1].id)
            else:
                workflow, agents = chain(3)
                result = await workflow.run(checkpoint_id=sys.argv[2], checkpoint_storage=storage)
                print([len(a.calls) for a in agents], result.text)

        asyncio.run(main(sys.argv[1]))
        """
    )
    path = tmp_path / "job.py"
    path.write_text(script)
    env = subprocess_env(__file__)
    first = subprocess.run([sys.executable, str(path), "first"], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run(
        [sys.executable, str(path), "second", first.stdout.strip()], env=env, capture_output=True, text=True, check=True
    )
    assert second.stdout.strip() == "[0, 1, 1] a2 saw 3"


async def test_a_changed_graph_is_refused_and_the_message_says_what_changed(tmp_path: Path) -> None:
    storage = InMemoryCheckpointStorage()
    workflow, _ = chain(3, storage=storage)
    await workflow.run("hello")
    other, agents = chain(4)
    with pytest.raises(CheckpointError, match=r"graph differs.*now has executor a3") as caught:
        await other.run(checkpoint_id=storage.list()[1].id, checkpoint_storage=storage)
    assert caught.value.checkpoint_id == storage.list()[1].id
    assert all(not a.calls for a in agents) and all(len(e.conversation) == 0 for e in other.executors.values())


async def test_resuming_a_finished_run_does_nothing_and_says_so(tmp_path: Path) -> None:
    storage = InMemoryCheckpointStorage()
    workflow, _ = chain(2, storage=storage)
    result = await workflow.run("hello")
    fresh, agents = chain(2)
    again = await fresh.run(checkpoint_id=result.checkpoint_id, checkpoint_storage=storage)
    assert again.status == "completed" and not again.get_outputs()
    assert all(not a.calls for a in agents)
    (warning,) = [e for e in again.events if e.type == "warning"]
    assert "had finished: nothing was left to resume" in warning.message
    # the executors hold the saved conversation, so the next input goes on from it
    assert len(fresh.executors["a1"].conversation) == 3


async def test_a_run_that_fails_keeps_its_checkpoints_and_resumes_once_fixed(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(3, storage=storage, fail_at=2)
    with pytest.raises(StepFailed):
        await workflow.run("hello")
    last = storage.latest()
    assert last is not None and last.superstep == 2 and last.status == "running"
    fixed, agents = chain(3)
    result = await fixed.run(checkpoint_id=last.id, checkpoint_storage=storage)
    assert [len(a.calls) for a in agents] == [0, 0, 1] and result.text == "a2 saw 3"


async def test_a_state_a_checkpoint_cannot_store_fails_the_run_naming_the_executor() -> None:
    workflow = WorkflowBuilder(start_executor=Holder("keeper", object())).build()
    with pytest.raises(CheckpointError, match=r"executor 'keeper': its state\['value'\] is a object"):
        await workflow.run("hi", checkpoint_storage=InMemoryCheckpointStorage())


async def test_shared_state_and_a_shared_session_come_back_as_they_were() -> None:
    storage = InMemoryCheckpointStorage()
    session = AgentSession(state={"visits": 2})
    agents = [ChatAgent(EchoChatClient(), name=n) for n in ("a", "b")]
    build = lambda: (  # noqa: E731
        WorkflowBuilder(start_executor=AgentExecutor(agents[0], session=session))
        .add_edge("a", AgentExecutor(agents[1], session=session))
        .build()
    )
    await build().run("hi", state={"plan": ("x", 1)}, checkpoint_storage=storage)
    fresh = build()
    fresh.executors["a"].session = fresh.executors["b"].session = None
    await fresh.run(checkpoint_id=storage.list()[1].id, checkpoint_storage=storage)
    a, b = fresh.executors["a"], fresh.executors["b"]
    assert a.session is b.session and a.session.state == {"visits": 2}
    assert a.session.session_id == session.session_id


async def test_state_values_keep_their_types(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow = WorkflowBuilder(start_executor=Holder("keeper", {"t": (1, "a"), "$odd": [Message("user", "x")]})).build()
    await workflow.run("hi", state={"plan": ("x", 1), 3: "three"}, checkpoint_storage=storage)
    fresh = WorkflowBuilder(start_executor=Holder("keeper", None)).build()
    result = await fresh.run(checkpoint_id=storage.latest().id, checkpoint_storage=FileCheckpointStorage(tmp_path))
    assert fresh.executors["keeper"].value == {"t": (1, "a"), "$odd": [Message("user", "x")]}
    assert dict(result.state) == {"plan": ("x", 1), 3: "three", "seen": "hi"}


async def test_an_agent_whose_history_lives_on_the_service_gets_a_warning() -> None:
    agent = ChatAgent(EchoChatClient(history_mode="service"), name="stored")
    workflow = WorkflowBuilder(start_executor=agent).build()
    result = await workflow.run("hi", checkpoint_storage=InMemoryCheckpointStorage())
    (warning,) = [e for e in result.events if e.type == "warning"]
    assert "executor 'stored'" in warning.message and "lives on the service" in warning.message


# -- the cost: each message once ------------------------------------------------------------


def prior(m: int) -> list[Message]:
    return [
        Message("user" if (m - i) % 2 == 1 else "assistant", f"prior message {i:05d}: lorem ipsum dolor sit amet")
        for i in range(m)
    ]


def log_rows(directory: Path) -> list[Any]:
    return [json.loads(line) for line in (directory / "checkpoints.jsonl").read_text().splitlines()]


async def _bytes(tmp_path: Path, m: int, n: int = 8) -> tuple[int, int, tuple[int, int]]:
    directory = tmp_path / f"m{m}"
    workflow, _ = chain(n, storage=FileCheckpointStorage(directory))
    await workflow.run([*prior(m), Message("user", "benchmark input")])
    lines = (directory / "checkpoints.jsonl").read_text().splitlines()
    stored = sum(len(line) for line in lines if not line.startswith('["c"'))
    checkpoints = sum(len(line) for line in lines if line.startswith('["c"'))
    rows = log_rows(directory)
    return stored, checkpoints, (messages_in(rows), sum(r[0] == "l" for r in rows))


def messages_in(rows: list[Any]) -> int:
    """The stored texts that are messages (the others are executor and session states)."""
    return sum(r[0] == "m" and '"role":' in r[2] for r in rows)


async def test_each_message_is_stored_once_and_checkpoints_do_not_grow_with_the_conversation(tmp_path: Path) -> None:
    pool0, ck0, lines0 = await _bytes(tmp_path, 0)
    pool100, _, lines100 = await _bytes(tmp_path, 100)
    pool200, ck200, lines200 = await _bytes(tmp_path, 200)
    # 8 agents hold one conversation: each message is stored once (the input and 8 replies), with one
    # link per position
    assert (lines0, lines100, lines200) == ((9, 9), (109, 109), (209, 209))
    # the messages grow linearly with the conversation ...
    assert abs((pool200 - pool100) - (pool100 - pool0)) < 0.02 * (pool200 - pool100)
    # ... and the checkpoints themselves hardly at all: a conversation is one key, however long
    assert ck200 - ck0 < 200


async def test_the_messages_a_storage_has_are_not_written_again_by_the_next_run(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(3, storage=storage)
    await workflow.run([*prior(50), Message("user", "first")])
    before = messages_in(log_rows(tmp_path))
    await workflow.run("second")
    assert messages_in(log_rows(tmp_path)) - before == 4  # the new input and three replies


# -- bad checkpoints ------------------------------------------------------------------------


async def _logged(tmp_path: Path) -> tuple[FileCheckpointStorage, Path, str]:
    """A 2-agent run in a file storage; the id of its checkpoint after superstep 1."""
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(2, storage=storage)
    await workflow.run("hello")
    return storage, tmp_path / "checkpoints.jsonl", storage.list()[1].id


def _edit_line(log: Path, checkpoint_id: str, edit: Any) -> None:
    lines = log.read_text().split("\n")
    (i,) = [n for n, line in enumerate(lines) if line.startswith('["c"') and f'"id":"{checkpoint_id}"' in line]
    lines[i] = edit(lines[i])
    log.write_text("\n".join(lines))


async def _resume(storage: Any, checkpoint_id: str) -> list[RecordingAgent]:
    fresh, agents = chain(2)
    await fresh.run(checkpoint_id=checkpoint_id, checkpoint_storage=storage)
    return agents


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace('"superstep":1', '"superstep":2', 1), "changed after it was written"),
        (lambda t: t.replace('"request_seq":0', '"request_seq":5'), "changed after it was written"),
        (lambda t: t.replace('"format":1', '"format":7'), "has format 7; this agent_nb reads format 1"),
        (lambda t: "not json", r"there is no checkpoint .* unreadable lines \(line \d+\)"),
    ],
    ids=["edited-header", "edited-body", "foreign-version", "garbage"],
)
async def test_a_damaged_checkpoint_raises_naming_it_and_the_problem(tmp_path: Path, edit: Any, problem: str) -> None:
    _, log, mid = await _logged(tmp_path)
    _edit_line(log, mid, edit)
    fresh = FileCheckpointStorage(tmp_path)
    with pytest.raises(CheckpointError, match=problem) as caught:
        await _resume(fresh, mid)
    assert mid in str(caught.value)


async def test_a_cut_off_write_is_reported_never_skipped_and_repair_is_explicit(tmp_path: Path) -> None:
    storage, log, mid = await _logged(tmp_path)
    ids = [i.id for i in storage.list()]
    newest = ids[-1]
    log.write_text(log.read_text()[:-40])  # the last checkpoint's line, cut off
    fresh = FileCheckpointStorage(tmp_path)
    with pytest.raises(CheckpointError, match=r"newest record of .* is incomplete"):
        fresh.latest()
    with pytest.raises(CheckpointError, match="ends with an incomplete record"):
        await chain(1, storage=fresh)[0].run("more")  # nothing is written after a cut-off record
    assert fresh.repair() > 0 and fresh.repair() == 0
    assert newest not in [i.id for i in fresh.list()] and fresh.latest().id == ids[-2]
    assert [i.id for i in storage.list()] == ids[:-1]  # the first storage reads the log as it is now, too
    assert (await _resume(fresh, mid))[1].calls  # the checkpoints before it were intact


async def test_a_changed_message_is_detected_by_its_hash(tmp_path: Path) -> None:
    _, log, mid = await _logged(tmp_path)
    log.write_text(
        log.read_text().replace('\\"hello\\"', '\\"HELLO\\"').replace('text\\":\\"hello', 'text\\":\\"HELLO')
    )
    assert "HELLO" in log.read_text()
    with pytest.raises(CheckpointError, match="was changed after it was written"):
        await _resume(FileCheckpointStorage(tmp_path), mid)


async def test_a_missing_message_is_named(tmp_path: Path) -> None:
    _, log, mid = await _logged(tmp_path)
    log.write_text("".join(f"{line}\n" for line in log.read_text().splitlines() if not line.startswith('["m"')))
    with pytest.raises(CheckpointError, match="which its storage does not hold"):
        await _resume(FileCheckpointStorage(tmp_path), mid)


async def test_a_class_the_workflow_does_not_name_is_never_rebuilt(tmp_path: Path) -> None:
    """Even with a valid checksum, a checkpoint cannot make agent_nb import or build an arbitrary class."""
    from agent_nb import TurnToken
    from agent_nb.workflow.checkpoints.format import dumps
    from agent_nb.workflow.checkpoints.storage import _checksum

    storage = FileCheckpointStorage(tmp_path)
    workflow = WorkflowBuilder(start_executor=Holder("keeper", None)).build()
    await workflow.run("hi", state={"token": TurnToken()}, checkpoint_storage=storage)
    last = storage.latest().id

    def forge(line: str) -> str:
        _, header, body = json.loads(line)
        text = dumps(body).replace("agent_nb.workflow.agent_executor:TurnToken", "subprocess:Popen")
        assert "subprocess:Popen" in text
        header["checksum"] = _checksum(header, text)
        return f'["c",{dumps(header)},{text}]'

    _edit_line(tmp_path / "checkpoints.jsonl", last, forge)
    fresh = WorkflowBuilder(start_executor=Holder("keeper", "untouched")).build()
    with pytest.raises(CheckpointError, match="subprocess:Popen, which is not among the types"):
        await fresh.run(checkpoint_id=last, checkpoint_storage=FileCheckpointStorage(tmp_path))
    assert fresh.executors["keeper"].value == "untouched"


async def test_compact_keeps_the_live_checkpoints_and_what_they_need(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(3, storage=storage)
    await workflow.run([*prior(30), Message("user", "go")])
    infos = storage.list()
    for info in infos[:-1]:
        storage.delete(info.id)
    before = (tmp_path / "checkpoints.jsonl").stat().st_size
    storage.compact()
    assert (tmp_path / "checkpoints.jsonl").stat().st_size < before
    reopened = FileCheckpointStorage(tmp_path)
    assert [i.id for i in reopened.list()] == [infos[-1].id]
    fresh, agents = chain(3)
    await fresh.run(checkpoint_id=infos[-1].id, checkpoint_storage=reopened)
    assert len(fresh.executors["a2"].conversation) == 34 and not any(a.calls for a in agents)


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("bad", ["../outside", "a/b", "", ".hidden", "x" * 200, 7])
def test_an_id_can_never_name_a_place_outside_the_storage(kind: str, bad: Any, tmp_path: Path) -> None:
    storage = make_storage(kind, tmp_path)
    with pytest.raises(CheckpointError, match="is not a checkpoint id"):
        storage.load(bad)
    with pytest.raises(CheckpointError, match="is not a checkpoint id"):
        storage.delete(bad)


@pytest.mark.parametrize("kind", STORAGES)
async def test_an_unknown_id_lists_what_there_is(kind: str, tmp_path: Path) -> None:
    storage = make_storage(kind, tmp_path)
    workflow, _ = chain(1, storage=storage)
    await workflow.run("hi")
    with pytest.raises(CheckpointError, match="there is no checkpoint 'nope' in this storage") as caught:
        await workflow.run(checkpoint_id="nope")
    assert storage.list()[-1].id in str(caught.value)


@pytest.mark.parametrize("kind", STORAGES)
async def test_delete_and_latest_by_workflow(kind: str, tmp_path: Path) -> None:
    storage = make_storage(kind, tmp_path)
    first, _ = chain(1, storage=storage)
    await first.run("hi")
    other = WorkflowBuilder(start_executor=ChatAgent(MirrorChatClient(), name="m"), name="other").build()
    await other.run("hi", checkpoint_storage=storage)
    assert storage.latest("workflow").workflow == "workflow"
    assert storage.latest().workflow == "other"
    assert [i.workflow for i in storage.list("other")] == ["other", "other"]
    gone = storage.list()[0].id
    assert storage.delete(gone) is True and storage.delete(gone) is False
    assert gone not in [i.id for i in storage.list()]
    assert InMemoryCheckpointStorage().latest() is None


async def test_a_tampered_sqlite_row_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    storage = SQLiteCheckpointStorage(path)
    workflow, _ = chain(2, storage=storage)
    await workflow.run("hello")
    mid = storage.list()[1].id
    # someone else edits the file: another connection, as another program would
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        edited = other.execute("UPDATE checkpoints SET body = replace(body, 'a0', 'zz') WHERE id = ?", (mid,))
        assert edited.rowcount == 1
    with pytest.raises(CheckpointError, match="changed after it was written"):
        await _resume(storage, mid)  # the storage that wrote it
    storage.close()
    reopened = SQLiteCheckpointStorage(path)  # and a new one on the same file
    with contextlib.closing(reopened), pytest.raises(CheckpointError, match="changed after it was written"):
        await _resume(reopened, mid)


def test_the_log_is_json_lines(tmp_path: Path) -> None:
    import asyncio

    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(2, storage=storage)
    asyncio.run(workflow.run("hello"))
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoints.jsonl"]
    kinds = [row[0] for row in log_rows(tmp_path)]
    assert set(kinds) == {"m", "l", "c"} and kinds.count("c") == 3


async def test_a_resumed_run_writes_only_the_messages_that_are_new(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    workflow, _ = chain(3, storage=storage)
    await workflow.run([*prior(20), Message("user", "go")])
    before = messages_in(log_rows(tmp_path))
    fresh, _ = chain(3)
    await fresh.run(checkpoint_id=storage.list()[1].id, checkpoint_storage=FileCheckpointStorage(tmp_path))
    # the 22 messages of the checkpoint are not written again; the two replies made anew are
    # (this checkpoint cannot know that a later one of the first run stored the same text)
    assert messages_in(log_rows(tmp_path)) == before + 2


async def test_no_secret_of_a_client_or_its_options_reaches_a_checkpoint(tmp_path: Path) -> None:
    secret = "sk-live-do-not-store-1234"
    client = EchoChatClient()
    client.api_key = secret  # type: ignore[attr-defined]
    agent = ChatAgent(client, name="a", options={"api_key": secret, "extra_headers": {"Authorization": secret}})
    workflow = WorkflowBuilder(start_executor=agent).build()
    await workflow.run("hello", checkpoint_storage=FileCheckpointStorage(tmp_path), client_kwargs={"*": {"k": secret}})
    assert secret not in (tmp_path / "checkpoints.jsonl").read_text()


async def test_a_streamed_run_takes_the_same_checkpoints() -> None:
    storage = InMemoryCheckpointStorage()
    workflow, _ = chain(3, storage=storage)
    events = [e async for e in workflow.run("hello", stream=True)]
    assert [e.superstep for e in events if e.type == "checkpoint"] == [0, 1, 2, 3]
    fresh, agents = chain(3)
    await fresh.run(checkpoint_id=storage.list()[2].id, checkpoint_storage=storage)
    assert [len(a.calls) for a in agents] == [0, 0, 1]
