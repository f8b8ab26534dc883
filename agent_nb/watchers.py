"""Watchers of every experiment as it runs (``agent_nb.telemetry`` is one): around the experiment and each cell.

``Experiment.run`` is wrapped in ``watched_experiment`` and each cell's run in ``watched_cell``
(``experiments/experiment.py``, ``experiments/runner.py``); with no watcher registered, each costs
one check of an empty list. A watcher has two methods, each returning a context manager:

- ``experiment(experiment, engine)``, entered in the task that runs the experiment, before its
  cells' tasks are made (what it sets in ``contextvars`` they see);
- ``cell(cell)``, entered in the cell's task around its run, measures and scores: when it exits,
  the cell is finished (its status, error and scores are set).

A watcher that raises does not stop the experiment: it is said as a ``RuntimeWarning``. This module
sits below the experiments package, so that telemetry fills it without loading experiments.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager
from typing import Any, ParamSpec, Protocol, TypeVar

__all__ = ["WATCHERS", "Watcher", "watch", "watched_cell", "watched_experiment"]


class Watcher(Protocol):
    """What a watcher has: a context manager around an experiment, and one around each cell."""

    def experiment(self, experiment: Any, engine: Any) -> AbstractContextManager[object]: ...

    def cell(self, cell: Any) -> AbstractContextManager[object]: ...


WATCHERS: list[Watcher] = []

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")
C = TypeVar("C")
R = TypeVar("R")


def watch(watcher: Watcher) -> Callable[[], None]:
    """Tell ``watcher`` of every experiment from now on; call what it returns to stop."""
    WATCHERS.append(watcher)

    def stop() -> None:
        if watcher in WATCHERS:
            WATCHERS.remove(watcher)

    return stop


def _failed(watcher: Watcher, what: str, exc: Exception) -> None:
    warnings.warn(f"experiment watcher {watcher!r} failed on {what}: {exc!r}", RuntimeWarning, 3)


@contextlib.contextmanager
def _each(what: str, enter: Callable[[Watcher], AbstractContextManager[object]]) -> Iterator[None]:
    """Every watcher's context manager around the block (a failing watcher is left out, with a warning)."""
    entered: list[tuple[Watcher, AbstractContextManager[object]]] = []
    for watcher in tuple(WATCHERS):
        try:
            manager = enter(watcher)
            manager.__enter__()
        except Exception as exc:
            _failed(watcher, what, exc)
        else:
            entered.append((watcher, manager))
    error: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        error = exc
        raise
    finally:
        for watcher, manager in reversed(entered):
            try:
                manager.__exit__(type(error) if error else None, error, error.__traceback__ if error else None)
            except Exception as exc:
                _failed(watcher, what, exc)


def watched_experiment(run: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """``Experiment.run`` inside every watcher's ``experiment(...)``."""

    @functools.wraps(run)
    async def watched(*args: P.args, **kwargs: P.kwargs) -> T:
        if not WATCHERS:
            return await run(*args, **kwargs)
        experiment, engine = args[0], kwargs.get("engine", "local")
        with _each("an experiment", lambda w: w.experiment(experiment, engine)):
            return await run(*args, **kwargs)

    return watched


def watched_cell(
    run_cell: Callable[[S, C, R], Coroutine[Any, Any, C]],
) -> Callable[[S, C, R], Coroutine[Any, Any, C]]:
    """A cell's run inside every watcher's ``cell(cell)``."""

    @functools.wraps(run_cell)
    async def watched(spec: S, cell: C, ready: R) -> C:
        if not WATCHERS:
            return await run_cell(spec, cell, ready)
        with _each("a cell", lambda w: w.cell(cell)):
            return await run_cell(spec, cell, ready)

    return watched
