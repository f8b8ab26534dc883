"""Nothing lost: the store receives cells as they finish; a run again runs only what is missing.

A kill -9 and a Ctrl-C in the middle are real (a child Python, killed or interrupted by signal); the
final result must equal an uninterrupted run, cell for cell, with nothing duplicated.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from builds import Slow, chain, finished, questions, stable, stored, until_stored
from doubles import subprocess_env

from agent_nb import MirrorChatClient
from agent_nb.experiments import Experiment, ExperimentError, ExperimentStore, StoreError, scorers

MODES = {"writer.context_mode": ["full", "last_agent"]}
CALLS: list[str] = []
BROKEN = {"on": False}


class Counting:
    """A mirror that counts its requests by the first words of the user's question."""

    def __init__(self) -> None:
        self.inner = MirrorChatClient(words=8)
        self.capabilities, self.history_mode = self.inner.capabilities, self.inner.history_mode

    async def get_response(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        CALLS.append(messages[0].text)
        if BROKEN["on"] and "budget is 1 " in messages[0].text:
            raise RuntimeError("the model is down for question 1")
        return await self.inner.get_response(messages, *args, **kwargs)

    def get_streaming_response(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_streaming_response(messages, *args, **kwargs)


def counted(config: dict[str, Any]) -> Any:
    return chain(config, Counting())


async def test_a_run_again_runs_only_the_missing_cells(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    exp = Experiment(counted, inputs=questions(4), grid=MODES, scorers=[scorers.had_in_context("writer", "budget")])
    first = stable((await exp.run(store=path)).to_records())
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM cells WHERE k IN (1, 6)")
    CALLS.clear()
    again = await exp.run(store=path)
    assert len(CALLS) == 2 * 3  # two cells, three agents each
    assert stable(again.to_records()) == first and again.complete
    CALLS.clear()
    await exp.run(store=path)
    assert CALLS == []


async def test_a_new_store_has_pages_that_hold_several_cells_and_an_older_file_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    ExperimentStore(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA page_size").fetchone()[0] == 16384  # a cell and its trace: 2-3 KB
    older = tmp_path / "older.sqlite"
    with sqlite3.connect(older) as db:  # a file made with SQLite's default pages keeps them
        db.execute("PRAGMA page_size=4096")
        db.execute("CREATE TABLE other (x)")
    result = await Experiment(counted, inputs=questions(2), name="older").run(store=older)
    assert len(result.to_records()) == 2
    with sqlite3.connect(older) as db:
        assert db.execute("PRAGMA page_size").fetchone()[0] == 4096


async def test_failed_cells_run_again_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    exp = Experiment(counted, inputs=questions(3))
    BROKEN["on"] = True
    try:
        first = await exp.run(store=path)
    finally:
        BROKEN["on"] = False
    assert [c.status for c in first.cells()] == ["ok", "failed", "ok"]
    assert [c.status for c in (await exp.run(store=path)).cells()] == ["ok", "failed", "ok"]
    CALLS.clear()
    fixed = await exp.run(store=path, rerun_failed=True)
    assert [c.status for c in fixed.cells()] == ["ok", "ok", "ok"] and len(CALLS) == 3


async def test_a_changed_definition_is_refused_never_mixed(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    await Experiment(counted, inputs=questions(3), name="modes").run(store=path)
    changed = Experiment(counted, inputs=questions(4), name="modes")
    with pytest.raises(ExperimentError, match=r"another definition \(inputs changed\).*replace=True"):
        await changed.run(store=path)
    assert stored(path) == 3
    await Experiment(counted, inputs=questions(4), name="modes, four").run(store=path)  # another name: both kept
    replaced = await changed.run(store=path, replace=True)
    assert len(replaced) == 4
    listed = {e["name"]: (e["cells"], e["stored"]) for e in ExperimentStore(path).experiments()}
    assert listed == {"modes": (4, 4), "modes, four": (4, 4)}


def test_the_identity_of_an_experiment_is_stable_and_follows_its_definition() -> None:
    a = Experiment(counted, inputs=questions(3), grid=MODES, name="x")
    assert a.id == Experiment(counted, inputs=questions(3), grid=MODES, name="x").id
    assert a.id != Experiment(counted, inputs=questions(3), grid=MODES, name="x", repeats=2).id
    assert a.id != Experiment(counted, inputs=questions(3), grid={"writer.context_mode": ["full"]}, name="x").id
    assert a.id != Experiment(chain, inputs=questions(3), grid=MODES, name="x").id  # another build function
    assert a.id != Experiment(counted, inputs=questions(3), grid=MODES, name="x", scorers=[scorers.json_valid()]).id


def test_a_store_that_cannot_be_written_says_where_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match=r"dir\.sqlite: it is a directory; give a file"):
        ExperimentStore(tmp_path / "dir.sqlite")
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(StoreError, match=r"a-file/runs\.sqlite: unable to open.*[Gg]ive"):
        ExperimentStore(tmp_path / "a-file" / "runs.sqlite")


def stalled(config: dict[str, Any]) -> Any:
    """The first input answers at once; the second waits a minute (the test stops it before)."""
    return chain(config, Slow(MirrorChatClient(words=8), lambda text: 60.0 if "budget is 1 " in text else 0.0))


async def test_a_finished_cell_is_stored_within_half_a_second_however_long_the_next_takes(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    exp = Experiment(stalled, inputs=questions(2), name="stalled")
    task = asyncio.ensure_future(exp.run(store=path, max_concurrency=1, progress=False))
    try:
        started = time.monotonic()
        await until_stored(path, 1, task)  # as another program reads the file, while the second cell waits
        assert time.monotonic() - started < 1.5 and not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert finished(path) == 1 and stored(path) == 2  # the second, stopped while it waited: cancelled


async def test_cancelled_in_the_middle_it_keeps_the_finished_cells_and_says_how_to_resume(
    tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "runs.sqlite"

    def build(config: dict[str, Any]) -> Any:
        return chain(config, Slow(MirrorChatClient(words=8), 0.02))

    exp = Experiment(build, inputs=questions(30), name="slow")
    task = asyncio.ensure_future(exp.run(store=path, max_concurrency=2))
    await until_stored(path, 4, task)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    kept, cancelled = finished(path), stored(path) - finished(path)
    err = capsys.readouterr().err
    assert f"experiment 'slow' stopped: {kept} of 30 cells finished ({cancelled} stopped while running" in err
    assert "run it again with the same store" in err
    assert 4 <= kept < 30 and cancelled == 2  # both cells under way (max_concurrency=2), recorded as such
    with sqlite3.connect(path) as db:
        errors = db.execute("SELECT json_extract(summary, '$.error') FROM cells WHERE status = 'cancelled'").fetchall()
    assert errors == [("the experiment was stopped while this cell ran; run it again to run this cell",)] * 2
    whole = await exp.run(store=path, max_concurrency=4)
    reference = await exp.run(store=tmp_path / "reference.sqlite", max_concurrency=4)
    assert stable(whole.to_records()) == stable(reference.to_records()) and len(whole) == 30


CHILD = """
import sys
from builds import Slow, chain, questions
from agent_nb import MirrorChatClient
from agent_nb.experiments import Experiment, scorers

def build(config):
    return chain(config, Slow(MirrorChatClient(words=8), 0.01))

exp = Experiment(build, inputs=questions(40), grid={"writer.context_mode": ["full", "last_agent"]},
                 scorers=[scorers.had_in_context("writer", "budget")], name="killed")
result = exp.run_sync(store=sys.argv[1], max_concurrency=2)
print("complete", len(result))
"""


def child(path: Path, test_file: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        env=subprocess_env(test_file),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, cells: int, process: subprocess.Popen[str], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while stored(path) < cells if path.exists() else True:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the child stored nothing in time"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["kill -9", "ctrl-c"])
def test_killed_or_interrupted_in_the_middle_then_run_again_equals_an_uninterrupted_run(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "runs.sqlite"
    first = child(path, __file__)
    try:
        wait_for(path, 10, first)
        first.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGINT)
        _, err = first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    kept = finished(path)
    assert 10 <= kept < 80, kept
    if how == "ctrl-c":
        assert first.returncode != 0 and "KeyboardInterrupt" in err
        assert f"experiment 'killed' stopped: {kept} of 80 cells finished" in err
    second = child(path, __file__)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert "complete 80" in out and stored(path) == 80
    reference = tmp_path / "reference.sqlite"
    third = child(reference, __file__)
    assert third.communicate(timeout=120)[0].strip() == "complete 80"
    with sqlite3.connect(path) as a, sqlite3.connect(reference) as b:
        query = "SELECT k, status, json_remove(summary, '$.latency_s') FROM cells ORDER BY k"
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
        assert a.execute("SELECT COUNT(DISTINCT k) FROM cells").fetchone()[0] == 80


def test_changing_a_helper_of_the_build_or_a_scorer_makes_another_experiment(tmp_path: Path) -> None:
    source = """
from builds import chain

def helper(config):
    return chain(config)

def build(config):
    return helper(config)

def judged(cell):
    return len(cell.output) > 3
"""
    ids = []
    for n, (helper, score) in enumerate(
        [("chain(config)", "3"), ("chain(config)", "3"), ("chain(dict(config))", "3"), ("chain(config)", "4")]
    ):
        path = tmp_path / f"variant{n}.py"
        path.write_text(
            source.replace(
                "helper(config):\n    return chain(config)", f"helper(config):\n    return {helper}"
            ).replace("> 3", f"> {score}")
        )
        namespace: dict[str, Any] = {"__name__": f"variant{n}"}  # its functions' module
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        exp = Experiment(namespace["build"], inputs=questions(1), scorers=[namespace["judged"]], name="same")
        ids.append(exp.definition()["target"]["code"] + "/" + exp.definition()["scorers"][0][1])
    assert ids[0] == ids[1] and len({ids[0], ids[2], ids[3]}) == 3
