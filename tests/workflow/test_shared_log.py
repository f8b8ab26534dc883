"""Several processes sharing one checkpoint directory: every append is made under a lock on the log, at its end.

Two real processes take checkpoints, delete some and claim the same requests at the same time; a third
storage then reads every checkpoint of both, finds nothing damaged, and sees each request answered by
one of them only. A write that fails is taken back to where it began, never past what another storage
appended meanwhile; and a log another process compacts meanwhile (a new file renamed over it) loses no write.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from doubles import RecordingAgent, subprocess_env

from agent_nb import AgentExecutor, CheckpointError, WorkflowBuilder
from agent_nb.workflow import FileCheckpointStorage

ROUNDS = 40
BURST = 50


def chain(n: int = 2, storage: Any = None) -> Any:
    executors = [AgentExecutor(RecordingAgent(f"a{i}")) for i in range(n)]
    builder = WorkflowBuilder(start_executor=executors[0], checkpoint_storage=storage)
    for x, y in itertools.pairwise(executors):
        builder.add_edge(x, y)
    return builder.build()


CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from agent_nb.workflow import FileCheckpointStorage
    from agent_nb.workflow.checkpoints.format import Checkpoint
    from agent_nb.workflow.checkpoints.storage import new_checkpoint_id
    from test_shared_log import BURST, chain

    directory, name, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    storage = FileCheckpointStorage(directory)
    workflow = chain(2, storage)
    (directory.parent / f"{name}.ready").touch()
    while not (directory.parent / "go").exists():
        time.sleep(0.001)

    async def main():
        began = time.time()
        saved, deleted, claims = [], [], {}
        for k in range(rounds):
            result = await workflow.run(f"{name} {k}")
            ids = [e.checkpoint_id for e in result.events if e.type == "checkpoint"]
            saved += ids
            for j in range(BURST):  # small checkpoints, one after another: appends as close together as can be
                cid = new_checkpoint_id()
                body = {"by": name, "k": k, "j": j}
                storage.save(Checkpoint(cid, "burst", "-", j, "now", "running", None, body), [], [(cid, '"text"')])
                saved.append(cid)
            earlier = storage.claim_answer("w", f"r{k}", {"by": name})
            claims[f"r{k}"] = None if earlier is None else dict(earlier)
            if k % 5 == 4:
                assert storage.delete(ids[0]), ids[0]
                deleted.append(ids[0])
        seen = [i.id for i in storage.list()]  # its own view: nothing damaged
        return {"saved": saved, "deleted": deleted, "claims": claims, "seen": seen, "during": [began, time.time()]}

    try:
        report = asyncio.run(main())
    except Exception as exc:
        report = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))
    """
)


def test_two_processes_appending_to_one_log_stay_in_step(tmp_path: Path) -> None:
    directory = tmp_path / "checkpoints"
    FileCheckpointStorage(directory).close()
    names = ("p1", "p2")
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(directory), name, str(ROUNDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(__file__),
        )
        for name in names
    ]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"{name}.ready").exists() for name in names):
            assert time.monotonic() < deadline, "the children did not start"
            assert all(c.poll() is None for c in children), [c.communicate() for c in children]
            time.sleep(0.01)
        (tmp_path / "go").touch()  # both start appending at once
        outputs = [c.communicate(timeout=120) for c in children]
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
    reports = {}
    for name, (out, err) in zip(names, outputs, strict=True):
        assert out.strip(), err[-3000:]
        reports[name] = json.loads(out.strip().splitlines()[-1])
        assert "error" not in reports[name], f"{name}: {reports[name].get('error')}"

    began, ended = zip(*(r["during"] for r in reports.values()), strict=True)
    assert max(began) < min(ended), "the two processes did not append at the same time"
    saved = {cid for r in reports.values() for cid in r["saved"]}
    deleted = {cid for r in reports.values() for cid in r["deleted"]}
    assert len(saved) == 2 * ROUNDS * (3 + BURST) and len(deleted) == 2 * (ROUNDS // 5)
    for r in reports.values():  # each saw its own checkpoints, and only checkpoints that were written
        assert set(r["saved"]) - set(r["deleted"]) <= set(r["seen"]) <= saved

    third = FileCheckpointStorage(directory)
    assert [i.id for i in third.list()] == sorted(saved - deleted)  # list() raises on any damaged record
    for cid in sorted(saved - deleted):
        assert third.load(cid).id == cid
    for cid in sorted(deleted):
        with pytest.raises(CheckpointError, match="there is no checkpoint"):
            third.load(cid)
    assert third.repair() == 0 and not (directory / third.DAMAGED).exists()

    for k in range(ROUNDS):
        request = f"r{k}"
        winners = [name for name in names if reports[name]["claims"][request] is None]
        assert len(winners) == 1, f"{request} was claimed by {winners or 'nobody'}"
        (loser,) = set(names) - set(winners)
        assert reports[loser]["claims"][request] == {"by": winners[0]}  # refused, with the winner's record
        assert third.answer_to("w", request) == {"by": winners[0]}


def test_a_write_taken_back_keeps_what_another_storage_appended_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    first = FileCheckpointStorage(tmp_path)
    asyncio.run(chain(2, first).run("hello"))
    ids = [i.id for i in first.list()]
    other = FileCheckpointStorage(tmp_path)
    assert [i.id for i in other.list()] == ids
    log = tmp_path / first.LOG
    main = threading.current_thread()
    real_write = os.write
    meanwhile: list[threading.Thread] = []

    def write(fd: int, data: Any) -> int:
        if threading.current_thread() is not main or meanwhile or not os.path.samestat(os.fstat(fd), os.stat(log)):
            return real_write(fd, data)
        # the other storage appends now, in the middle of this write (it waits for the lock, if one is taken)
        meanwhile.append(threading.Thread(target=other.delete, args=(ids[1],)))
        meanwhile[0].start()
        meanwhile[0].join(timeout=1)
        real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(CheckpointError, match=r"cannot write the deletion of checkpoint .*nothing of it was kept"):
        first.delete(ids[0])
    meanwhile[0].join(timeout=10)
    assert not meanwhile[0].is_alive()
    monkeypatch.undo()

    fresh = FileCheckpointStorage(tmp_path)
    assert [i.id for i in fresh.list()] == [ids[0], ids[2]]  # the other's deletion kept, the failed one not made
    assert fresh.repair() == 0
    assert [i.id for i in first.list()] == [i.id for i in other.list()] == [ids[0], ids[2]]


COMPACTOR = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agent_nb.workflow import FileCheckpointStorage

    directory = Path(sys.argv[1])
    storage = FileCheckpointStorage(directory)
    (directory.parent / "compactor.ready").touch()
    compacted = 0
    while not (directory.parent / "stop").exists():
        storage.compact()
        compacted += 1
        time.sleep(0.002)  # the writer takes the lock between two compactions (without it, it may starve for minutes)
    print(compacted)
    """
)


async def test_a_log_compacted_by_another_process_meanwhile_loses_no_write(tmp_path: Path) -> None:
    directory = tmp_path / "checkpoints"
    storage = FileCheckpointStorage(directory)
    workflow = chain(2, storage)
    await workflow.run("before")
    child = subprocess.Popen(
        [sys.executable, "-c", COMPACTOR, str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(__file__),
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "compactor.ready").exists():
            assert time.monotonic() < deadline and child.poll() is None, child.communicate()
            time.sleep(0.01)
        kept = [i.id for i in storage.list()]
        for k in range(ROUNDS):  # each write lands in the log that is at the path, compacted or not
            result = await workflow.run(f"turn {k}")
            kept += [e.checkpoint_id for e in result.events if e.type == "checkpoint"]
            if k % 3 == 0:
                assert storage.delete(kept.pop(-3))
            assert storage.claim_answer("w", f"r{k}", {"by": "me"}) is None
    finally:
        (tmp_path / "stop").touch()
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and int(out) > 0, err[-3000:]
    fresh = FileCheckpointStorage(directory)
    assert [i.id for i in fresh.list()] == sorted(kept)
    assert all(fresh.load(cid).id == cid for cid in kept)
    assert all(fresh.answer_to("w", f"r{k}") == {"by": "me"} for k in range(ROUNDS))
    assert [i.id for i in storage.list()] == sorted(kept)
