"""The Dask engine: an embedded LocalCluster and a real scheduler with two worker processes give exactly the
local results; what cannot travel, and workers that cannot run this agent_nb, are refused before any cell runs.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from builds import Slow, boom_chain, chain, questions, routed_chain, stable, stored, until_stored

from agent_nb import MirrorChatClient
from agent_nb.clients.replay import cassette_client
from agent_nb.experiments import Experiment, ExperimentError, cassette_for, scorers

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
        with pytest.raises(ExperimentError, match=r"must run agent_nb 0\.1\.0.*tcp://127\.0\.0\.1:\d+ has 0\.0\.1"):
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
