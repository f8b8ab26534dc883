"""Watchers of experiments: told of the experiment and of each finished cell; one that fails does not stop it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from agent_nb import ChatAgent, MirrorChatClient
from agent_nb.experiments import Experiment
from agent_nb.watchers import WATCHERS, watch


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @contextlib.contextmanager
    def experiment(self, experiment: Any, engine: Any) -> Iterator[None]:
        self.seen.append(("experiment", experiment.name, engine))
        yield
        self.seen.append(("experiment done", experiment.name))

    @contextlib.contextmanager
    def cell(self, cell: Any) -> Iterator[None]:
        self.seen.append(("cell", cell.k, cell.status, dict(cell.scores)))
        yield
        self.seen.append(("cell done", cell.k, cell.status, dict(cell.scores)))


class Broken(Recorder):
    def cell(self, cell: Any) -> Any:
        raise RuntimeError("the watcher is broken")


def answered(cell: Any) -> bool:
    return bool(cell.output)


def experiment() -> Experiment:
    def build(config: dict[str, Any]) -> ChatAgent:
        return ChatAgent(MirrorChatClient(), name="echo")

    return Experiment(build, inputs=["a"], scorers=[answered], name="watched")


async def test_a_watcher_sees_the_experiment_around_its_cells_and_each_cell_once_finished() -> None:
    recorder = Recorder()
    stop = watch(recorder)
    try:
        await experiment().run(progress=False)
    finally:
        stop()
    assert recorder.seen == [
        ("experiment", "watched", "local"),
        ("cell", 0, "ok", {}),
        ("cell done", 0, "ok", {"answered": True}),
        ("experiment done", "watched"),
    ]
    assert WATCHERS == []


async def test_a_failing_watcher_is_said_and_the_experiment_goes_on() -> None:
    stop = watch(Broken())
    try:
        with pytest.warns(RuntimeWarning, match="failed on a cell: RuntimeError"):
            result = await experiment().run(progress=False)
    finally:
        stop()
    assert [c.status for c in result.cells()] == ["ok"]
