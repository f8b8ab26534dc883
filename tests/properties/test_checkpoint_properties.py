"""Checkpoint, then resume, equals the uninterrupted run.

A generated workflow (``graphs.py``) runs once uninterrupted. An identical copy runs with a checkpoint
storage (in memory, or files in a temporary directory) and is interrupted after superstep ``k``, in
one of two ways:

- ``resume any``: the copy runs to the end, and a third copy resumes from ``storage.list()[k]``;
- ``after a crash``: an agent of superstep ``k + 1`` fails, so the copy's run fails and keeps its
  checkpoints; a third copy, healthy, resumes from ``storage.latest()`` (the one after superstep ``k``),
  with the same SQLite history file as the crashed run.

The resumed run must yield what the uninterrupted run yielded after superstep ``k``, end with the same
shared state, and leave every executor's conversation, every session and every history (in memory and
SQLite) as the uninterrupted run left them; and the next run of both must do the same.

Found by this property before commit 7154011 ("Checkpoints hold the history a run has not written yet"):
a checkpoint did not hold the turns the run had saved but not yet written (they are held until the run
completes), so a resumed run lost them: two agents sharing a session with an in-memory history, resumed
after superstep 1, and the second agent saw 1 message instead of 3.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from graphs import GraphSpec, build, graph_specs, holdings, outputs_by_superstep, shape
from hypothesis import event, given
from hypothesis import strategies as st
from strategies import examples, short_text

from agent_nb import StepFailed
from agent_nb.workflow import FileCheckpointStorage, InMemoryCheckpointStorage


def storage_in(kind: str, directory: Path) -> Any:
    return InMemoryCheckpointStorage() if kind == "memory" else FileCheckpointStorage(directory / "checkpoints")


def reopened(kind: str, storage: Any, directory: Path) -> Any:
    """The storage as another process would open it (one in memory can only be shared)."""
    return storage if kind == "memory" else FileCheckpointStorage(directory / "checkpoints")


@examples(70)
@given(
    graph_specs(histories=(None, "memory", "sqlite")),
    short_text,
    st.sampled_from(["memory", "file"]),
    st.sampled_from(["resume any", "after a crash"]),
    st.data(),
)
def test_resuming_a_checkpoint_ends_where_the_uninterrupted_run_ends(
    spec: GraphSpec, text: str, kind: str, how: str, data: st.DataObject
) -> None:
    event(shape(spec))

    async def check(directory: Path) -> None:
        whole = build(spec, sqlite_path=directory / "whole.sqlite")
        expected = await whole.workflow.run(text)
        steps = max((s.superstep for s in expected.trace), default=0)

        storage = storage_in(kind, directory)
        second = build(spec, sqlite_path=directory / "second.sqlite", storage=storage)
        if how == "resume any":
            again = await second.workflow.run(text)
            assert outputs_by_superstep(again) == outputs_by_superstep(expected)  # checkpoints change nothing
            infos = storage.list()
            assert [i.superstep for i in infos] == list(range(steps + 1))
            k = data.draw(st.sampled_from(range(len(infos))), label="resume after superstep")
            checkpoint_id = infos[k].id
            history_file = directory / "third.sqlite"  # a history of its own: resuming does not roll one back
        else:
            k = data.draw(st.sampled_from(range(steps)), label="crash in superstep k + 1, k")
            in_next = sorted({s.executor_id for s in expected.trace if s.superstep == k + 1})
            failing = data.draw(st.sampled_from(in_next), label="failing agent")
            model = second.models[int(failing[1:])]
            model.broken = RuntimeError("the machine went down")  # on its first call after superstep k
            model.fail_at = 1 + sum(1 for s in expected.trace if s.executor_id == failing and s.superstep <= k)
            try:
                await second.workflow.run(text)
            except StepFailed as exc:
                assert exc.superstep == k + 1
            else:
                raise AssertionError("the run did not fail")
            latest = storage.latest()
            assert latest is not None and latest.superstep == k
            checkpoint_id = latest.id
            history_file = directory / "second.sqlite"  # the crashed run wrote nothing: go on with its file
        second.close()
        event(f"{how}, after superstep {'last' if k == steps else k}")

        third = build(spec, sqlite_path=history_file)
        try:
            resumed = await third.workflow.run(
                checkpoint_id=checkpoint_id, checkpoint_storage=reopened(kind, storage, directory)
            )
            after_k = {s: out for s, out in outputs_by_superstep(expected).items() if s > k}
            assert outputs_by_superstep(resumed) == after_k
            assert dict(resumed.state) == dict(expected.state)
            assert resumed.status == expected.status
            assert await holdings(third) == await holdings(whole)

            # and from there on, both are the same conversation
            nxt = await third.workflow.run("and then?")
            assert outputs_by_superstep(nxt) == outputs_by_superstep(await whole.workflow.run("and then?"))
            assert await holdings(third) == await holdings(whole)
        finally:
            whole.close()
            third.close()
            if kind == "file":
                storage.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(check(Path(directory)))
