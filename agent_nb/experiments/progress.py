"""One progress bar per experiment (tqdm: a widget in Jupyter, text in a terminal), throttled.

Off when ``AGENT_NB_NO_PROGRESS=1`` (agent_nb's pytest plugin sets it for the notebooks nbval
runs, so their stored outputs stay stable) unless ``progress=True`` asks for it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .cells import Cell

__all__ = ["Progress", "wanted"]


def wanted(progress: bool | None) -> bool:
    """Whether to draw a bar: as asked, else unless ``AGENT_NB_NO_PROGRESS`` is set."""
    if progress is None:
        return os.environ.get("AGENT_NB_NO_PROGRESS", "") not in ("1", "true", "yes")
    return bool(progress)


class Progress:
    """Done / total, failures, rate and time left; ``update`` may be called from any thread."""

    def __init__(self, name: str, total: int, done: int, *, enabled: bool, failures: int = 0) -> None:
        """``done`` and ``failures``: what the store already held (a run resumed goes on from there)."""
        self._bar: Any = None
        self._failures = failures
        self._lock = threading.Lock()
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=done, desc=name, unit="cell", mininterval=0.5, smoothing=0.05)
            if failures:
                self._bar.set_postfix(failures=failures, refresh=False)

    def update(self, cell: Cell) -> None:
        if self._bar is None:
            return
        with self._lock:
            if cell.status != "ok":
                self._failures += 1
                self._bar.set_postfix(failures=self._failures, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
