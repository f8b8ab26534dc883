"""The Dask engine: an embedded LocalCluster and a real scheduler with two worker processes give exactly the
local results; what cannot travel, and workers that cannot run this agent_nb, are refused before any cell runs.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from builds import Slow, boom_chain, chain, questions, routed_chain, stable, stored, until_stored

from agent_nb import MirrorChatClient, ScriptedChatClient
from agent_nb.clients.replay import cassette_client
from agent_nb.experiments import Experiment, ExperimentError, ModelJudge, cassette_for, scorers

MODES = {"writer.context_mode": ["full", "last_agent"]}


def experiment(n: int = 6) -> Experiment:
    return Experiment(
        chain, inputs=questions(n), grid=MODES, repeats=2, scorers=[scorers.had_in_context("writer", "budget")]
    )


async def test_an_embedded_local_cluster_gives_exactly_the_local_results(tmp_path: Path) -> None:
    exp = experiment()
    local = stable((await exp.run()).to_records())
    on_cluster = await exp.run(engine="dask", store=tmp_path / "runs.sqlite", batch_size=5)
    assert stable(on_cluster.to_records()) == local and len(local) == 24
    assert on_cluster.cell(7).trace[2].executor_id == "writer"  # traces come back with the cells


async def test_a_real_scheduler_and_two_workers_give_exactly_the_local_results(dask_client: Any) -> None:
    exp = experiment(8)
    local = stable((await exp.run()).to_records())
    on_cluster = await exp.run(engine=dask_client, batch_size=4)
    assert stable(on_cluster.to_records()) == local
    ready = Experiment(routed_chain(), inputs=questions(4), grid={"route": ["fast", "smart"], **MODES})
    assert stable((await ready.run(engine=dask_client)).to_records()) == stable((await ready.run()).to_records())


class Locked:
    """A scorer holding a lock: it cannot be pickled."""

    name = "locked"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, cell: Any) -> bool:
        return True


async def test_what_cannot_travel_is_refused_before_anything_is_submitted(dask_client: Any, tmp_path: Path) -> None:
    exp = Experiment(chain, inputs=questions(2), scorers=[Locked()])
    path = tmp_path / "runs.sqlite"
    with pytest.raises(
        ExperimentError, match=r"the scorer 'locked' cannot be sent to the cluster.*nothing was submitted"
    ):
        await exp.run(engine=dask_client, store=path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 0
    assert dask_client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


def _set_version(value: str) -> str:
    import agent_nb

    old, agent_nb.__version__ = agent_nb.__version__, value
    return old


def _hide_agent_nb(hide: bool) -> None:
    import sys

    if hide:
        sys.modules["_agent_nb_hidden"] = sys.modules["agent_nb"]
        sys.modules["agent_nb"] = None  # type: ignore[assignment]  # `import agent_nb` now raises ImportError
    else:
        sys.modules["agent_nb"] = sys.modules.pop("_agent_nb_hidden")


async def test_workers_with_another_agent_nb_or_none_are_named(dask_client: Any) -> None:
    exp = experiment(1)
    dask_client.run(_set_version, "0.0.1")
    try:
        with pytest.raises(ExperimentError, match=r"must run agent_nb 0\.1\.0 .*tcp://127\.0\.0\.1:\d+ has 0\.0\.1"):
            await exp.run(engine=dask_client)
    finally:
        dask_client.run(_set_version, "0.1.0")
    dask_client.run(_hide_agent_nb, True)
    try:
        with pytest.raises(ExperimentError, match=r"cannot run agent_nb.*install agent_nb 0\.1\.0 on every worker"):
            await exp.run(engine=dask_client)
    finally:
        dask_client.run(_hide_agent_nb, False)
    assert len((await exp.run(engine=dask_client)).to_records()) == 4


REAL_CALLS: list[int] = []


class Unreachable:
    """The "real" model of a replay: making it sends nothing, calling it fails the test."""

    model = "mirror"
    capabilities = MirrorChatClient().capabilities
    history_mode = "caller"

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a replay called the real model")

    def get_streaming_response(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a replay called the real model")


def recorded(directory: Path, record: bool) -> Any:
    def build(config: dict[str, Any], case: Any) -> Any:
        real = (lambda: MirrorChatClient(words=8)) if record else Unreachable
        return chain(config, cassette_client(cassette_for(directory, config, case), real, record=record))

    return build


async def test_an_experiment_recorded_once_replays_on_every_engine(tmp_path: Path, dask_client: Any) -> None:
    record = Experiment(recorded(tmp_path, True), inputs=questions(3), grid=MODES, name="cassettes")
    recorded_records = stable((await record.run(max_concurrency=4)).to_records())
    assert len(list(tmp_path.glob("*.json"))) == 6
    replay = Experiment(recorded(tmp_path, False), inputs=questions(3), grid=MODES, name="cassettes")
    for engine in ("local", dask_client):
        assert stable((await replay.run(engine=engine, max_concurrency=4)).to_records()) == recorded_records


def test_a_model_judge_made_on_the_worker_is_not_shipped_with_its_client() -> None:
    import cloudpickle

    made: list[int] = []

    def make() -> Any:
        made.append(1)
        return MirrorChatClient()

    from agent_nb.experiments import ModelJudge

    judge = ModelJudge(make, "Is it good?")
    assert judge.client is not None and made == [1]
    again = cloudpickle.loads(cloudpickle.dumps(judge))
    assert again._client is None and made == [1]  # made again where it is used


def slow_chain(config: dict[str, Any]) -> Any:
    return chain(config, Slow(MirrorChatClient(words=8), 0.02))


async def test_cancelled_on_a_cluster_it_cancels_the_batches_and_keeps_what_came_back(
    dask_client: Any, tmp_path: Path
) -> None:
    import asyncio

    path = tmp_path / "runs.sqlite"
    exp = Experiment(slow_chain, inputs=questions(40), name="cluster stopped")
    task = asyncio.ensure_future(exp.run(engine=dask_client, store=path, batch_size=2, max_concurrency=1))
    await until_stored(path, 4, task)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    kept = stored(path)
    assert 4 <= kept < 40
    with sqlite3.connect(path) as db:
        assert {status for (status,) in db.execute("SELECT status FROM cells")} == {"ok"}
    for _ in range(200):  # the scheduler lets go of the cancelled batches
        if dask_client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("batches still on the cluster after the run was cancelled")
    whole = await exp.run(engine=dask_client, store=path)
    assert len(whole) == 40 and stable(whole.to_records()) == stable((await exp.run()).to_records())


async def test_fail_fast_on_a_cluster_stops_at_the_first_failed_batch(dask_client: Any) -> None:
    inputs = ["boom first", *(f"plan {i}" for i in range(40))]
    result = await Experiment(boom_chain, inputs=inputs).run(
        engine=dask_client, fail_fast=True, batch_size=1, max_concurrency=1
    )
    assert 1 <= len(result) < 41 and result.cell(0).status == "failed"


class UnreachableJudge(Unreachable):
    model = "scripted"


def judged_recorded(directory: Path, record: bool) -> Any:
    """A judge with a cassette of its own for each cell (a cassette replays its requests in order)."""
    real = (lambda: ScriptedChatClient(["SCORE: 0.25"] * 100)) if record else UnreachableJudge

    def client(cell: Any) -> Any:
        return cassette_client(cassette_for(directory, cell.config, cell.case), real, record=record)

    return ModelJudge(client, "Does the answer keep the budget?")


async def test_a_model_judge_recorded_once_replays_on_every_engine(tmp_path: Path, dask_client: Any) -> None:
    def run(record: bool, engine: Any) -> Any:
        exp = Experiment(chain, inputs=questions(4), grid=MODES, scorers=[judged_recorded(tmp_path, record)])
        return exp.run(engine=engine, max_concurrency=4)

    recorded_records = stable((await run(True, "local")).to_records())
    assert {r["score.judge"] for r in recorded_records} == {0.25} and len(list(tmp_path.glob("*.json"))) == 8
    for engine in ("local", dask_client):
        assert stable((await run(False, engine)).to_records()) == recorded_records


async def test_a_client_holding_a_key_is_never_sent_to_the_cluster(dask_client: Any, tmp_path: Path) -> None:
    from agent_nb.clients.openai import OpenAIChatClient

    keyed = OpenAIChatClient("model", api_key="sk-never-shipped-0123456789")  # never used: nothing open in it

    def build(config: dict[str, Any]) -> Any:
        return chain(config, keyed)

    with pytest.raises(ExperimentError, match=r"the build function holds a secret \(OpenAIChatClient\._api_key"):
        await Experiment(build, inputs=questions(2)).run(engine=dask_client, store=tmp_path / "runs.sqlite")
    judge = ModelJudge(OpenAIChatClient("judge", api_key="sk-never-shipped-0123456789"), "Good?")
    with pytest.raises(ExperimentError, match=r"the scorer 'judge' holds a secret.*made on each worker"):
        await Experiment(chain, inputs=questions(2), scorers=[judge]).run(engine=dask_client)
    assert dask_client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


class Watching:
    """A ``distributed.Client`` whose submissions are written down (everything else goes to the client)."""

    def __init__(self, client: Any) -> None:
        self.client, self.submitted = client, []

    def submit(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        self.submitted.append(args)
        return self.client.submit(function, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


async def test_the_definition_travels_once_per_worker_and_cells_go_in_batches(dask_client: Any) -> None:
    watching = Watching(dask_client)
    exp = Experiment(chain, inputs=questions(30), grid=MODES)  # 60 cells
    result = await exp.run(engine=watching, batch_size=8)
    assert len(result) == 60 and len(watching.submitted) == 8  # ceil(60 / 8) batches, not a task per cell
    for shipped, batch, *_ in watching.submitted:
        assert not isinstance(shipped, bytes) and type(shipped).__name__ == "Future"  # the scattered definition
        assert 1 <= len(batch) <= 8 and all(isinstance(k, int) for k, *_ in batch)
    assert len({s.key for s, *_ in watching.submitted}) == 1  # one definition, scattered to every worker once


async def test_the_embedded_cluster_is_closed_after_the_run() -> None:
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert len(await Experiment(chain, inputs=questions(2)).run(engine="dask")) == 2
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()]
    assert [p for p in left if p.status() != psutil.STATUS_ZOMBIE] == []


def stalled_on_the_cluster(config: dict[str, Any]) -> Any:
    """The first input answers at once; the second waits a minute, unless its cell is cancelled."""
    return chain(config, Slow(MirrorChatClient(words=8), lambda text: 60.0 if "budget is 1 " in text else 0.0))


async def test_on_a_cluster_a_finished_batch_is_stored_at_once_and_a_stop_stops_the_cells_under_way(
    dask_client: Any, tmp_path: Path
) -> None:
    import asyncio
    import time

    path = tmp_path / "runs.sqlite"
    exp = Experiment(stalled_on_the_cluster, inputs=questions(2), name="stalled on the cluster")
    task = asyncio.ensure_future(exp.run(engine=dask_client, store=path, batch_size=1, max_concurrency=1))
    started = time.monotonic()
    await until_stored(path, 1, task)  # the first batch, while the second's cell waits on its worker
    assert time.monotonic() - started < 5 and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Each worker has one thread: a task waits behind a stopped cell that still runs there. Within a
    # look or two at the stop event the thread is free again, not after the cell's minute.
    workers = list(dask_client.scheduler_info()["workers"])
    probes = [dask_client.submit(time.monotonic, workers=[w], pure=False) for w in workers]
    stopped = time.monotonic()
    for probe in probes:
        assert await asyncio.wrap_future(asyncio.get_running_loop().run_in_executor(None, probe.result, 10)) > 0
    assert time.monotonic() - stopped < 3, "a worker still ran the stopped cell"
    assert stored(path) == 1


def test_a_worker_with_another_build_of_this_version_is_named(dask_client: Any) -> None:
    from agent_nb.experiments import dask_engine

    def other_build() -> None:
        from agent_nb.experiments import dask_engine as engine

        engine._code_hash.cache_clear()
        engine._code_hash = lambda: "0123456789ab"  # type: ignore[assignment]

    def this_build() -> None:
        import importlib

        from agent_nb.experiments import dask_engine as engine

        importlib.reload(engine)

    dask_client.run(other_build)
    try:
        with pytest.raises(ExperimentError, match=r"has another build of 0\.1\.0 \(code 0123456789ab\)"):
            dask_engine.check_workers(dask_client)
    finally:
        dask_client.run(this_build)
    assert dask_engine.check_workers(dask_client) == 2


def test_without_the_dask_extra_the_error_says_how_to_install_it(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    with pytest.raises(ExperimentError, match=r"needs Dask's distributed.*pip install 'agent_nb\[dask\]'"):
        Experiment(chain, inputs=questions(1)).run_sync(engine="dask")


SCRIPT = """
import sys
sys.path[:0] = [{tests!r}]
from builds import chain, questions
from agent_nb.experiments import Experiment
result = Experiment(chain, inputs=questions(2)).run_sync(engine="dask", progress=False)
print("cells", len(result))
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_a_main_guard_is_told_what_to_write(tmp_path: Path, guarded: bool) -> None:
    import subprocess

    code = SCRIPT.format(tests=str(Path(__file__).parent))
    if guarded:
        code = code.replace("result =", 'if __name__ == "__main__":\n    result =').replace("print(", "    print(")
    script = tmp_path / "script.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    if guarded:
        assert done.returncode == 0 and "cells 2" in done.stdout, done.stderr[-2000:]
    else:
        assert done.returncode != 0
        assert "did not start" in done.stderr and 'under `if __name__ == "__main__":`' in done.stderr
        assert "this process was started to be a worker" in done.stderr  # said by the workers themselves too
