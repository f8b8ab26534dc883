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
    """Run ``cells``; on cancellation, the cells under way are cancelled and awaited before it propagates."""
    pending = iter(cells)
    stop = asyncio.Event()

    async def worker() -> None:
        for cell in pending:  # one iterator shared by every worker: each cell is taken once
            if stop.is_set():
                return
            finished = await run_cell(spec, cell, ready)
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
