"""Watchers of every run as it goes (``agent_nb.telemetry`` is one): told each event of each run.

A run is watched by the observers registered when it starts; one started with none pays nothing
per event (its events go straight to its list). An observer is called as
``observer(run, event)``, in the task that emitted the event (so ``contextvars`` read there are the
run's); ``run.workflow`` and ``run.began`` (seconds since the epoch) say which run it is. An
observer that raises does not stop the run: it is said as a ``RuntimeWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["OBSERVERS", "Observer", "notify", "observe"]

Observer = Callable[[Any, Any], None]
OBSERVERS: list[Observer] = []


def observe(observer: Observer) -> Callable[[], None]:
    """Tell ``observer`` the events of every run started from now on; call what it returns to stop.

    A run is watched whole or not at all: one under way when it registers is not told, one under
    way when it stops is told to its end.
    """
    OBSERVERS.append(observer)

    def stop() -> None:
        if observer in OBSERVERS:
            OBSERVERS.remove(observer)

    return stop


def notify(run: Any, event: Any, observers: tuple[Observer, ...]) -> None:
    """Tell ``observers`` (those of ``run``) its ``event``."""
    for observer in observers:
        try:
            observer(run, event)
        except Exception as exc:  # a watcher's failure is not the run's
            warnings.warn(f"run observer {observer!r} failed on {type(event).__name__}: {exc!r}", RuntimeWarning, 2)
