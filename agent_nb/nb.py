"""Running a coroutine to completion from synchronous code, in a script or inside Jupyter."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["run_sync"]


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result.

    With no event loop running (a script) this is ``asyncio.run``. Inside a running loop
    (a Jupyter cell) the loop is made re-entrant with nest_asyncio, so the coroutine
    runs on the kernel's own loop, next to the objects already bound to it.
    """
    import asyncio  # imported on use, as everywhere in agent_nb: `import agent_nb` stays light

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import nest_asyncio  # type: ignore[import-untyped]

    nest_asyncio.apply(loop)
    return loop.run_until_complete(coro)
