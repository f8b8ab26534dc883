"""Running coroutines: to completion from synchronous code (a script, a Jupyter cell), and together.

``gather_or_cancel`` runs several at once and, when one fails, cancels the others and waits
for them, so nothing a failed step started runs on behind it (an executor of a superstep,
a tool call of a round).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

__all__ = ["gather_or_cancel", "run_sync"]

_lock = threading.Lock()
_background: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """One loop, in a daemon thread, for every ``run_sync`` made inside a running loop."""
    import asyncio

    global _background
    with _lock:
        if _background is None or _background.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agent_nb.run_sync", daemon=True).start()
            _background = loop
        return _background


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result.

    With no event loop running (a script) this is ``asyncio.run``. Inside a running loop (a
    Jupyter cell) the coroutine runs on agent_nb's own loop in a background thread while the
    caller waits; it is the same loop every time, so a client keeps its connections from one
    call to the next. (Re-entering the kernel's loop instead, as nest_asyncio does, lets the
    kernel start the next queued cell in the middle of this one, which breaks "Run All".)
    In a notebook ``await`` is still the better call; use one or the other with a given client.
    """
    import asyncio  # imported on use, as everywhere in agent_nb: `import agent_nb` stays light

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted (Ctrl-C, a kernel interrupt): do not leave it running
        raise


async def gather_or_cancel(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Their results, run concurrently; on the first failure the others are cancelled and awaited, then it is raised.

    Lighter than ``asyncio.gather`` (no gathering future, no callback per task): the caller awaits
    each task in turn, and a task that fails cancels its siblings itself, so a failure is acted on
    at once even while the caller still waits on an earlier task.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    together = _Together()
    awaitables = list(coros)
    tasks = together.tasks = [loop.create_task(together.run(c)) for c in awaitables]
    try:
        return [await task for task in tasks]
    except BaseException as exc:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for awaitable in awaitables:  # a task cancelled before it began never awaited its coroutine
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()  # (every task is over: a coroutine is done or never started, so this only closes it)
        cancelling = getattr(asyncio.current_task(), "cancelling", None)  # Python 3.11+
        if cancelling is not None and cancelling():  # cancelled from outside: a cancellation, whatever the tasks did
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise asyncio.CancelledError from exc
        error = together.error
        if error is None:
            raise
    raise error  # the first failure as it was (raised out here, its __context__ is left alone)


class _Together:
    """Tasks run together: the first to fail (or be cancelled from elsewhere) cancels the others."""

    __slots__ = ("error", "tasks")

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.tasks: list[asyncio.Task[Any]] = []

    async def run(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        except BaseException as exc:
            if self.error is None:
                self.error = exc
                import asyncio

                me = asyncio.current_task()
                for task in self.tasks:
                    if task is not me:  # cancelling itself would turn its own error into a cancellation
                        task.cancel()
            raise
