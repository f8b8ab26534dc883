"""The work a widget starts from its controls (a click, Enter), and how a test waits for it.

In a notebook the kernel's loop is running, so the work becomes a task and the control returns
at once; with no running loop (a script) it runs to the end before the call returns.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["Background"]

T = TypeVar("T")


class Background:
    """The tasks a widget started and has not seen finish."""

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T] | T:
        """``work`` as a task of the running loop; with none, its result once it has run."""
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(work)
        task = loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self) -> None:
        """Until every task started (and every task those started) has finished."""
        import asyncio

        while self._tasks:
            await asyncio.gather(*self._tasks)
