"""The local engine: cells on this process's event loop, at most ``max_concurrency`` at a time.

Bounded concurrency is what a model server that limits parallel requests needs, and what a
latency-bound model rewards (eight cells waiting on the network cost one cell's time). The cells
are taken in order, so the first configurations finish first; ``done`` sees each as it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from .cells import Cell
from .runner import ReadyWorkflow, Spec, run_cell

__all__ = ["run_local"]


async def run_local(
    spec: Spec,
    cells: Iterable[Cell],
    done: Callable[[Cell], Any],
    *,
    max_concurrency: int,
    ready: ReadyWorkflow | None = None,
    fail_fast: bool = False,
) -> None:
    """Run ``cells``; cancelled, it cancels the cells under way and awaits them before it propagates.

    A cell stopped while it ran is recorded as ``cancelled`` (``done`` sees it), and runs again next time.
    """
    pending = iter(cells)
    stop = asyncio.Event()

    async def worker() -> None:
        for cell in pending:  # one iterator shared by every worker: each cell is taken once
            if stop.is_set():
                return
            try:
                finished = await run_cell(spec, cell, ready)
            except asyncio.CancelledError:  # the run was stopped: the cell under way is recorded as such
                cell.status, cell.error_type = "cancelled", "CancelledError"
                cell.error = "the experiment was stopped while this cell ran; run it again to run this cell"
                done(cell)
                raise
            done(finished)
            if fail_fast and finished.status != "ok":
                stop.set()

    workers = [asyncio.ensure_future(worker()) for _ in range(max_concurrency)]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
